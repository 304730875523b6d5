"""Drive one torch.amp.GradScaler(DEVICE) through a run with two models and two optimizers, and write its trace.

Model A (float32, first bias frozen) trains with Adam; model B (a float64 Linear and a float32 gain) with
SGD + momentum, so one optimizer holds grads of two dtypes. Every iteration accumulates gradients over
ACCUM micro-batches. The factors are not powers of two and growth_interval is 1; the schedule puts NaN in
the loss, inf in one optimizer's grads, update(new_scale) as float and as tensor, a load_state_dict into
the scaler in use, and the setters mid-run. tests/test_parity.cpp replays the schedule with amp::GradScaler.
The data and initial parameters are drawn on the CPU whatever the device (tests/test_parity_cuda.cpp
replays the run on CUDA).
Usage: python tests/parity/grad_scaler_trace_multi.py OUT.json [cpu|cuda]   (default cpu)
"""
import json
import math

import torch

import trace_args

STEPS = 36
ACCUM = 2                    # micro-batches per optimizer step (gradient accumulation)
BATCH = 16                   # rows per micro-batch
INIT_SCALE = 3.0e36          # far too high, and not a power of two: the first steps overflow by themselves
GROWTH_FACTOR = 1.7
BACKOFF_FACTOR = 0.3
GROWTH_INTERVAL = 1
LR_ADAM = 1e-3
LR_SGD, MOMENTUM = 0.01, 0.9
CLIP_NORM = 0.5              # every third step: unscale_ optimizer A explicitly, then clip its grads
NAN_LOSS = [14]              # the second micro-batch's loss is multiplied by NaN: every grad is NaN
INF_GRAD_B = [9, 23]         # inf written into the gain's grad: only optimizer B skips
UPDATE_FLOAT = {17: 5000.5}  # update(new_scale) with a float
UPDATE_TENSOR = {26: 777.25}  # update(new_scale) with a 0-dim float32 tensor
LOAD_STATE = {20: {"scale": 12345.5, "growth_factor": 1.3, "backoff_factor": 0.45, "growth_interval": 2,
                   "_growth_tracker": 1}}  # load_state_dict into the scaler in use
SETTERS = {29: {"growth_factor": 2.5, "backoff_factor": 0.6, "growth_interval": 3}}


def main(out_path, device):
    torch.manual_seed(1)
    model_a = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 2))
    model_a[0].bias.requires_grad_(False)  # frozen: no grad, skipped by unscale_ and by Adam
    linear_b = torch.nn.Linear(4, 2).double()
    gain = torch.nn.Parameter(torch.ones(2, device=device))
    x = torch.randn(ACCUM * BATCH, 4)
    y_a, y_b = torch.randn(ACCUM * BATCH, 2), torch.randn(ACCUM * BATCH, 2)
    initial = [p.detach().clone() for p in list(model_a.parameters()) + list(linear_b.parameters())] + [gain.detach().cpu().clone()]
    model_a.to(device)
    linear_b.to(device)
    xd, y_ad, y_bd = x.to(device), y_a.to(device), y_b.to(device)
    params_a = list(model_a.parameters())
    params_b = list(linear_b.parameters()) + [gain]
    # foreach=False: the single-tensor loops LibTorch's optimizers run (Python's default on CUDA is foreach).
    opt_a = torch.optim.Adam(params_a, lr=LR_ADAM, foreach=False)
    opt_b = torch.optim.SGD(params_b, lr=LR_SGD, momentum=MOMENTUM, foreach=False)
    scaler = torch.amp.GradScaler(device, init_scale=INIT_SCALE, growth_factor=GROWTH_FACTOR,
                                  backoff_factor=BACKOFF_FACTOR, growth_interval=GROWTH_INTERVAL)
    trace = []
    for step in range(STEPS):
        if step in SETTERS:
            scaler.set_growth_factor(SETTERS[step]["growth_factor"])
            scaler.set_backoff_factor(SETTERS[step]["backoff_factor"])
            scaler.set_growth_interval(SETTERS[step]["growth_interval"])
        if step in LOAD_STATE:
            scaler.load_state_dict(LOAD_STATE[step])
        opt_a.zero_grad()
        opt_b.zero_grad()
        losses = []
        for mb in range(ACCUM):
            rows = slice(mb * BATCH, (mb + 1) * BATCH)
            loss_a = torch.nn.functional.mse_loss(model_a(xd[rows]), y_ad[rows], reduction="sum")
            out_b = linear_b(xd[rows].double()).float() * gain
            loss_b = torch.nn.functional.mse_loss(out_b, y_bd[rows], reduction="sum")
            loss = (loss_a + loss_b) / ACCUM
            if step in NAN_LOSS and mb == 1:
                loss = loss * float("nan")
            losses.append(None if math.isnan(loss.item()) else loss.item())  # JSON has no NaN: null
            scaler.scale(loss).backward()
        if step in INF_GRAD_B:
            gain.grad[0] = float("inf")
        if step % 3 == 0:
            scaler.unscale_(opt_a)
            torch.nn.utils.clip_grad_norm_(model_a.parameters(), CLIP_NORM, foreach=False)  # as LibTorch
        scaler.step(opt_a)
        scaler.step(opt_b)
        stepped = [sum(v.item() for v in scaler._found_inf_per_device(o).values()) == 0 for o in (opt_a, opt_b)]
        if step in UPDATE_FLOAT:
            scaler.update(UPDATE_FLOAT[step])
        elif step in UPDATE_TENSOR:
            scaler.update(torch.tensor(UPDATE_TENSOR[step], device=device))  # on the scaler's device
        else:
            scaler.update()
        trace.append({"step": step, "losses": losses, "stepped_a": stepped[0], "stepped_b": stepped[1],
                      "scale": scaler.get_scale(), "growth_tracker": scaler._get_growth_tracker()})
    doc = {
        "torch_version": torch.__version__,
        "device": device,
        "config": {"steps": STEPS, "accum": ACCUM, "batch": BATCH, "init_scale": INIT_SCALE,
                   "growth_factor": GROWTH_FACTOR, "backoff_factor": BACKOFF_FACTOR,
                   "growth_interval": GROWTH_INTERVAL, "lr_adam": LR_ADAM, "lr_sgd": LR_SGD, "momentum": MOMENTUM,
                   "clip_norm": CLIP_NORM, "nan_loss": NAN_LOSS, "inf_grad_b": INF_GRAD_B,
                   "update_float": [{"step": s, "scale": v} for s, v in UPDATE_FLOAT.items()],
                   "update_tensor": [{"step": s, "scale": v} for s, v in UPDATE_TENSOR.items()],
                   "load_state": [dict(step=s, **v) for s, v in LOAD_STATE.items()],
                   "setters": [dict(step=s, **v) for s, v in SETTERS.items()]},
        "x": x.tolist(), "y_a": y_a.tolist(), "y_b": y_b.tolist(),
        # Each parameter as its dtype and flat values; float64 values survive JSON exactly (repr round-trips).
        "initial_params": [{"dtype": str(p.dtype), "values": p.flatten().tolist()} for p in initial],
        "trace": trace,
        "final_params": [{"dtype": str(p.dtype), "values": p.detach().flatten().tolist()} for p in params_a + params_b],
    }
    with open(out_path, "w") as f:
        json.dump(doc, f)


if __name__ == "__main__":
    main(*trace_args.parse())
