"""Drive torch.amp.GradScaler(DEVICE) through a scripted run and write its trace as JSON.

tests/test_parity.cpp runs the same script with amp::GradScaler and requires the same trace (on CUDA:
tests/test_parity_cuda.cpp). The data and initial parameters are drawn on the CPU whatever the device, so
both devices replay the same numbers.
Usage: python tests/parity/grad_scaler_trace.py OUT.json [cpu|cuda]   (default cpu)
"""
import json
import math

import torch

import trace_args

STEPS = 40
INIT_SCALE = 2.0**126        # far too high: the first steps overflow by themselves and back off
GROWTH_FACTOR = 2.0
BACKOFF_FACTOR = 0.5
GROWTH_INTERVAL = 3          # small, so growth happens many times within the run
LR, MOMENTUM = 0.002, 0.9
CLIP_NORM = 1.0              # even steps: unscale_ explicitly, then clip
INJECT = {21: math.inf, 26: math.nan, 27: -math.inf, 33: math.inf}  # step -> value written into one grad


def main(out_path, device):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    x, y = torch.randn(32, 4), torch.randn(32, 2)
    initial = [p.detach().clone() for p in model.parameters()]
    model.to(device)
    xd, yd = x.to(device), y.to(device)
    # foreach=False: the single-tensor loop LibTorch's SGD runs (Python's default on CUDA is the foreach one).
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM, foreach=False)
    scaler = torch.amp.GradScaler(device, init_scale=INIT_SCALE, growth_factor=GROWTH_FACTOR,
                                  backoff_factor=BACKOFF_FACTOR, growth_interval=GROWTH_INTERVAL)
    trace = []
    for step in range(STEPS):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xd), yd, reduction="sum")  # ~70: 70 * 2^126 overflows
        scaler.scale(loss).backward()
        if step in INJECT:
            next(model.parameters()).grad.view(-1)[0] = INJECT[step]
        if step % 2 == 0:
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP_NORM, foreach=False)  # per-tensor norms, as LibTorch
        scaler.step(opt)
        found_inf = sum(v.item() for v in scaler._found_inf_per_device(opt).values())
        scaler.update()
        trace.append({"step": step, "loss": loss.item(), "stepped": found_inf == 0,
                      "scale": scaler.get_scale(), "growth_tracker": scaler._get_growth_tracker()})
    doc = {
        "torch_version": torch.__version__,
        "device": device,
        "config": {"steps": STEPS, "init_scale": INIT_SCALE, "growth_factor": GROWTH_FACTOR,
                   "backoff_factor": BACKOFF_FACTOR, "growth_interval": GROWTH_INTERVAL, "lr": LR,
                   "momentum": MOMENTUM, "clip_norm": CLIP_NORM,
                   "inject": [{"step": s, "value": str(v)} for s, v in sorted(INJECT.items())]},
        "x": x.tolist(), "y": y.tolist(),
        "initial_params": [p.flatten().tolist() for p in initial],
        "trace": trace,
        "final_params": [p.detach().flatten().tolist() for p in model.parameters()],
    }
    with open(out_path, "w") as f:
        json.dump(doc, f)


if __name__ == "__main__":
    main(*trace_args.parse())
