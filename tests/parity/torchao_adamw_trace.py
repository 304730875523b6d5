"""torchao's bf16 training without a master copy, traced for tests/test_bf16_step.cpp: its stochastic rounding
(torchao.optim.quant_utils._fp32_to_bf16_sr) and its _AdamW(bf16_stochastic_round=...) on bf16 parameters.

The C++ side replays each case with amp::stochastic_round_ and amp::Bf16Step around torch::optim::AdamW:
  sr_bits     inputs and torchao's rounded bits after torch.manual_seed(seed): the same bits are required
  adamw       two bf16 parameters pulled towards targets by _AdamW, 30 steps, after torch.manual_seed(seed),
              with bf16_stochastic_round True and False: the final bits, compared within a measured bound
              (torchao keeps the moments in bf16, torch::optim::AdamW in fp32)
  drift       4096 weights of 1.0, a constant gradient, lr 1e-4 (below half a bf16 spacing): the mean after
              40 steps, against which amp::Bf16Step's mean with its own seed is checked statistically
torchao compiles its step with torch.compile, whose generated code draws other random numbers; the trace runs
it eagerly (TORCHDYNAMO_DISABLE=1), so its draws come from the default generator as the C++ side's do.
Usage: python tests/parity/torchao_adamw_trace.py OUT.json [cpu|cuda]. Exits 3 (with one line) when torchao
cannot be imported.
"""
import json
import os
import sys

os.environ["TORCHDYNAMO_DISABLE"] = "1"  # before torch is imported

import torch  # noqa: E402

import trace_args  # noqa: E402
from bit_patterns import bits  # noqa: E402

try:
    import torchao
    from torchao.optim import _AdamW
    from torchao.optim.quant_utils import _fp32_to_bf16_sr
except ImportError as e:
    print(f"torchao is not importable: {e}")
    sys.exit(3)

SR_SEEDS = range(10)
SR_VALUES = 4096
LR, BETAS, EPS, WEIGHT_DECAY = 1e-3, (0.9, 0.999), 1e-8, 1e-2
ADAMW_STEPS = 30
ADAMW_SEED = 5
SHAPES = [(48, 32), (32,)]
DRIFT_N, DRIFT_STEPS, DRIFT_LR, DRIFT_SEED = 4096, 40, 1e-4, 1234


def sr_cases(device):
    cases = []
    for seed in SR_SEEDS:
        g = torch.Generator().manual_seed(100 + seed)
        # Values of every magnitude bf16 has, both signs, plus exact ones, so carries of every kind occur.
        x = torch.randn(SR_VALUES, generator=g) * torch.exp2(torch.randint(-40, 40, (SR_VALUES,), generator=g))
        x[:8] = torch.tensor([0.0, -0.0, 1.0, -2.0, float("inf"), -float("inf"), 3.3895e38, -1e-40])
        torch.manual_seed(seed)
        y = _fp32_to_bf16_sr(x.to(device))
        cases.append({"seed": seed, "x": bits(x), "y": bits(y)})
    return cases


def adamw_cases(device):
    g = torch.Generator().manual_seed(ADAMW_SEED)
    init = [(torch.randn(s, generator=g) * 0.5).bfloat16() for s in SHAPES]
    targets = [torch.randn(s, generator=g) for s in SHAPES]
    cases = {"init": [bits(p) for p in init], "targets": [bits(t) for t in targets],
             "shapes": [list(s) for s in SHAPES], "runs": []}
    for stochastic in (True, False):
        params = [p.clone().to(device).requires_grad_() for p in init]
        opt = _AdamW(params, lr=LR, betas=BETAS, eps=EPS, weight_decay=WEIGHT_DECAY,
                     bf16_stochastic_round=stochastic)
        torch.manual_seed(ADAMW_SEED)
        for _ in range(ADAMW_STEPS):
            for p, t in zip(params, targets):
                p.grad = (p.detach().float() - t.to(device)).bfloat16()  # the gradient of 0.5 (p - t)^2
            opt.step()
        cases["runs"].append({"stochastic": stochastic, "final": [bits(p) for p in params]})
    return cases


def drift_case(device):
    p = torch.ones(DRIFT_N, dtype=torch.bfloat16, device=device, requires_grad=True)
    opt = _AdamW([p], lr=DRIFT_LR, betas=BETAS, eps=EPS, weight_decay=0.0, bf16_stochastic_round=True)
    torch.manual_seed(DRIFT_SEED)
    for _ in range(DRIFT_STEPS):
        p.grad = torch.ones_like(p)
        opt.step()
    final = p.detach().double()
    return {"n": DRIFT_N, "steps": DRIFT_STEPS, "lr": DRIFT_LR, "mean": final.mean().item(),
            "var": final.var().item()}


def main(out_path, device):
    doc = {"torch_version": torch.__version__, "torchao_version": torchao.__version__, "device": device,
           "config": {"lr": LR, "betas": list(BETAS), "eps": EPS, "weight_decay": WEIGHT_DECAY,
                      "steps": ADAMW_STEPS, "seed": ADAMW_SEED},
           "sr_bits": sr_cases(device), "adamw": adamw_cases(device), "drift": drift_case(device)}
    with open(out_path, "w") as f:
        json.dump(doc, f)


if __name__ == "__main__":
    main(*trace_args.parse())
