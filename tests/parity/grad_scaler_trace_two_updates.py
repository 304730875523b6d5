"""Two optimizers on one torch.amp.GradScaler(DEVICE), with an update() after each step: the pattern
step(o0); update(); step(o1); update() in one iteration. Python accepts it without an error (update() only
refuses when no unscale_/step came since the last update()), and it is wrong in a silent way: when the
scale moves between the two steps (a back-off after an inf in model 0's grads, or a growth), optimizer 1's
gradients, scaled by the old scale in backward(), are unscaled by the new one; and the growth tracker
counts two clean steps per iteration. The trace records, after every iteration, the scale and tracker
after each update(), whether each optimizer stepped, the factor by which optimizer 1's applied gradients
differ from the correctly unscaled ones, and every parameter. tests/test_parity.cpp replays it with
amp::GradScaler (on CUDA: tests/test_parity_cuda.cpp). The data and initial parameters are drawn on the CPU
whatever the device, so both devices replay the same numbers.
Usage: python tests/parity/grad_scaler_trace_two_updates.py OUT.json [cpu|cuda]   (default cpu)
"""
import json

import torch

import trace_args

STEPS = 12
INIT_SCALE = 1024.0
GROWTH_FACTOR = 2.0
BACKOFF_FACTOR = 0.5
GROWTH_INTERVAL = 3          # counted twice per iteration: the scale grows between the two steps
LR, MOMENTUM = 0.01, 0.9
INF_GRAD_0 = [2, 7]          # inf written into model 0's grad: the scale backs off before optimizer 1 unscales
INF_GRAD_1 = [9]             # inf in model 1's grad: optimizer 1 skips, the second update() backs off


def found_inf(scaler, opt):
    return sum(v.item() for v in scaler._found_inf_per_device(opt).values())


def main(out_path, device):
    torch.manual_seed(3)
    model0, model1 = torch.nn.Linear(4, 3), torch.nn.Linear(4, 3)
    x, y0, y1 = torch.randn(16, 4), torch.randn(16, 3), torch.randn(16, 3)
    initial = [p.detach().clone() for p in list(model0.parameters()) + list(model1.parameters())]
    model0.to(device)
    model1.to(device)
    xd, y0d, y1d = x.to(device), y0.to(device), y1.to(device)
    params0, params1 = list(model0.parameters()), list(model1.parameters())
    # foreach=False: the single-tensor loop LibTorch's SGD runs (Python's default on CUDA is the foreach one).
    opt0 = torch.optim.SGD(params0, lr=LR, momentum=MOMENTUM, foreach=False)
    opt1 = torch.optim.SGD(params1, lr=LR, momentum=MOMENTUM, foreach=False)
    scaler = torch.amp.GradScaler(device, init_scale=INIT_SCALE, growth_factor=GROWTH_FACTOR,
                                   backoff_factor=BACKOFF_FACTOR, growth_interval=GROWTH_INTERVAL)
    trace = []
    for step in range(STEPS):
        opt0.zero_grad()
        opt1.zero_grad()
        loss0 = torch.nn.functional.mse_loss(model0(xd), y0d, reduction="sum")
        loss1 = torch.nn.functional.mse_loss(model1(xd), y1d, reduction="sum")
        scale_backward = scaler.get_scale()  # the scale backward() multiplies every gradient by
        scaler.scale(loss0 + loss1).backward()
        if step in INF_GRAD_0:
            params0[0].grad.view(-1)[0] = float("inf")
        if step in INF_GRAD_1:
            params1[0].grad.view(-1)[0] = float("inf")
        correct1 = [p.grad.detach() / scale_backward for p in params1]  # exact: the scale is a power of two
        scaler.step(opt0)
        stepped0 = found_inf(scaler, opt0) == 0
        scaler.update()
        scale_between, tracker_between = scaler.get_scale(), scaler._get_growth_tracker()
        scaler.step(opt1)  # accepted: unscales by the scale update() just set
        stepped1 = found_inf(scaler, opt1) == 0
        scaler.update()
        # Optimizer 1's gradients as it applied them, against the correctly unscaled ones.
        factor1 = None
        if stepped1:
            ratios = torch.cat([(p.grad / c).flatten() for p, c in zip(params1, correct1)])
            factor1 = {"min": ratios.min().item(), "max": ratios.max().item()}
        trace.append({"step": step, "loss0": loss0.item(), "loss1": loss1.item(), "scale_backward": scale_backward,
                      "stepped0": stepped0, "scale_between": scale_between, "tracker_between": tracker_between,
                      "stepped1": stepped1, "scale": scaler.get_scale(), "growth_tracker": scaler._get_growth_tracker(),
                      "factor1": factor1,
                      "params": [p.detach().flatten().tolist() for p in params0 + params1]})
    # The one update() Python refuses: none since the last one recorded an inf check.
    try:
        scaler.update()
        refused = None
    except AssertionError as e:
        refused = str(e)
    doc = {
        "torch_version": torch.__version__,
        "device": device,
        "config": {"steps": STEPS, "init_scale": INIT_SCALE, "growth_factor": GROWTH_FACTOR,
                   "backoff_factor": BACKOFF_FACTOR, "growth_interval": GROWTH_INTERVAL, "lr": LR,
                   "momentum": MOMENTUM, "inf_grad_0": INF_GRAD_0, "inf_grad_1": INF_GRAD_1},
        "x": x.tolist(), "y0": y0.tolist(), "y1": y1.tolist(),
        "initial_params": [p.flatten().tolist() for p in initial],
        "trace": trace,
        "third_update_refused": refused,
    }
    with open(out_path, "w") as f:
        json.dump(doc, f)


if __name__ == "__main__":
    main(*trace_args.parse())
