#!/usr/bin/env python3
"""Times one AMP training step in Python (torch.autocast + torch.amp.GradScaler) and prints JSON.

The twin of src/bench/amp_step_bench.cpp (build/bin/amp-lab-bench): same cases, modes, flags,
initialisation and JSON keys. scripts/bench runs the two interleaved and compares them.

  bench_amp_step.py --case recipe|tiny|scaler-overhead --mode fp32|bf16|fp16 [--device cpu|cuda]
                    [--steps N] [--warmup N] [--threads N] [--seed N] [--max-seconds S]

--max-seconds stops the timed loop early (after at least 3 steps) once that much wall time has passed,
so a run on a busy machine stays bounded; "steps_done" says how many were timed.

Cases:
  recipe           PyTorch's AMP recipe MLP (Linear, ReLU, Linear, ReLU, Linear; MSE; SGD lr 1e-3),
                   scaled to the device: width 1024 batch 256 on the CPU, width 4096 batch 512 on CUDA.
  tiny             the same MLP at width 256, batch 64: bound by per-op overhead, not arithmetic.
  scaler-overhead  50 x Linear(64) (100 parameter tensors), batch 32. Steps alternate: even steps time
                   scale(loss) + unscale_ + step + update with the scaler on, odd steps time a plain
                   optimizer.step(); overhead = median(scaler calls) - median(plain step).
Modes: fp32 (autocast off, scaler off), bf16 (autocast bf16, scaler off), fp16 (autocast fp16 + scaler).

Weights and data come from torch's CPU generator after manual_seed(seed), drawn in the same order as the
C++ side (per layer: weight then bias, uniform in +-1/sqrt(fan_in); then x, y from randn), then moved to
the device. The checksums in the JSON let scripts/bench show both sides computed the same thing.

Host syncs: on the CPU nothing is asynchronous, so we count what would be a device-to-host read:
every call of Tensor.item, __bool__, __float__, __int__, __index__ and tolist made during the timed
steps (the methods are wrapped for exactly those steps; a wrapper costs well under a microsecond).
On CUDA we also count the warnings of torch.cuda.set_sync_debug_mode("warn"), which flags every
synchronising CUDA call, over 5 extra untimed steps after the timed ones (warnings cost time).
"""
import argparse
import json
import math
import statistics
import sys
import time
import warnings

import torch

SYNC_METHODS = ("item", "__bool__", "__float__", "__int__", "__index__", "tolist")


def shape_of(name, device):
    if name == "recipe":
        return (4096, 512, 3) if device == "cuda" else (1024, 256, 3)
    if name == "tiny":
        return (256, 64, 3)
    if name == "scaler-overhead":
        return (64, 32, 50)
    raise SystemExit(f"bench_amp_step.py: --case must be recipe, tiny or scaler-overhead, got '{name}'")


def make_model(width, layers):
    # The recipe's make_model(): Linear layers with a ReLU between each pair.
    mods = []
    for i in range(layers):
        mods.append(torch.nn.Linear(width, width))
        if i + 1 < layers:
            mods.append(torch.nn.ReLU())
    return torch.nn.Sequential(*mods)


class SyncCounter:
    """Counts device-to-host reads while active (see the module docstring)."""

    def __init__(self, cuda=False):
        self.cuda = cuda
        self.count = 0
        self.cuda_sync_warnings = 0
        self._saved = {}
        self._warnings = None

    def __enter__(self):
        for name in SYNC_METHODS:
            orig = getattr(torch.Tensor, name)
            self._saved[name] = orig

            def wrapper(t, *a, _orig=orig, **k):
                self.count += 1
                return _orig(t, *a, **k)

            setattr(torch.Tensor, name, wrapper)
        if self.cuda:
            self._warnings = warnings.catch_warnings(record=True)
            self._records = self._warnings.__enter__()
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
        return self

    def __exit__(self, *exc):
        for name, orig in self._saved.items():
            setattr(torch.Tensor, name, orig)
        if self.cuda:
            torch.cuda.set_sync_debug_mode("default")
            self.cuda_sync_warnings = sum("synchroniz" in str(w.message) for w in self._records)
            self._warnings.__exit__(*exc)
        return False


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--case", default="tiny")
    p.add_argument("--mode", default="fp32", choices=["fp32", "bf16", "fp16"])
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-seconds", type=float, default=0.0)
    a = p.parse_args()
    if a.steps < 1 or a.warmup < 0 or a.threads < 1:
        raise SystemExit("bench_amp_step.py: need --steps >= 1, --warmup >= 0, --threads >= 1")
    if a.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("bench_amp_step.py: --device cuda: no CUDA device is available")

    width, batch, layers = shape_of(a.case, a.device)
    overhead_case = a.case == "scaler-overhead"
    device = torch.device(a.device)
    cuda = a.device == "cuda"
    torch.set_num_threads(a.threads)

    def sync():
        if cuda:
            torch.cuda.synchronize()

    torch.manual_seed(a.seed)
    model = make_model(width, layers)
    linears = [m for m in model if isinstance(m, torch.nn.Linear)]
    with torch.no_grad():
        bound = 1.0 / math.sqrt(width)
        for lin in linears:
            lin.weight.copy_(torch.rand(width, width) * (2 * bound) - bound)
            lin.bias.copy_(torch.rand(width) * (2 * bound) - bound)
    x = torch.randn(batch, width)
    y = torch.randn(batch, width)

    def sum_of(tensors):
        return sum(t.detach().to("cpu", torch.float64).sum().item() for t in tensors)

    input_checksum = sum_of(model.parameters()) + sum_of([x, y])
    model.to(device)
    x, y = x.to(device), y.to(device)

    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    use_autocast = a.mode != "fp32"
    low = torch.float16 if a.mode == "fp16" else torch.bfloat16
    # The scaler only for fp16; the overhead case always has it on (that is what it measures).
    scaler = torch.amp.GradScaler(a.device, enabled=(a.mode == "fp16" or overhead_case))
    loss_fn = torch.nn.MSELoss()

    def forward_loss():
        with torch.autocast(device_type=a.device, dtype=low, enabled=use_autocast):
            return loss_fn(model(x), y)

    with torch.no_grad():
        initial_loss = forward_loss().double().item()

    # The training step, written once for all modes (the AMP recipe's loop body).
    def train_step():
        loss = forward_loss()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()  # set_to_none=True by default

    def scaled_step_timed():
        loss = forward_loss()
        sync()
        t0 = time.perf_counter()
        scaled = scaler.scale(loss)
        sync()
        ms = (time.perf_counter() - t0) * 1e3
        scaled.backward()
        sync()
        t0 = time.perf_counter()
        scaler.unscale_(opt)
        scaler.step(opt)
        scaler.update()
        sync()
        ms += (time.perf_counter() - t0) * 1e3
        opt.zero_grad()
        return ms

    def plain_step_timed():
        loss = forward_loss()
        loss.backward()
        sync()
        t0 = time.perf_counter()
        opt.step()
        sync()
        ms = (time.perf_counter() - t0) * 1e3
        opt.zero_grad()
        return ms

    out = {
        "impl": "python", "case": a.case, "mode": a.mode, "device": a.device,
        "threads": torch.get_num_threads(), "steps": a.steps, "warmup": a.warmup, "seed": a.seed,
        "shape": {"width": width, "batch": batch, "layers": layers},
        "param_tensors": len(list(model.parameters())), "torch": torch.__version__,
        "max_seconds": a.max_seconds,
    }

    def over_budget(start, done):
        return (a.max_seconds > 0 and done >= min(3, a.steps)
                and time.perf_counter() - start >= a.max_seconds)
    counter = SyncCounter()
    if not overhead_case:
        for _ in range(a.warmup):
            train_step()
        params_after_warmup = sum_of(model.parameters())
        ms = []
        with counter:
            start = time.perf_counter()
            for _ in range(a.steps):
                if over_budget(start, len(ms)):
                    break
                sync()
                t0 = time.perf_counter()
                train_step()
                sync()
                ms.append((time.perf_counter() - t0) * 1e3)
        out["steps_done"] = len(ms)
        out["step_ms"] = ms
        out["median_ms"] = statistics.median(ms)
    else:
        for _ in range(a.warmup):
            scaled_step_timed()
            plain_step_timed()
        params_after_warmup = sum_of(model.parameters())
        scaler_ms, plain_ms = [], []
        start = time.perf_counter()
        for _ in range(a.steps):
            if over_budget(start, len(scaler_ms)):
                break
            with counter:  # counts the scaled steps only
                scaler_ms.append(scaled_step_timed())
            plain_ms.append(plain_step_timed())
        out["steps_done"] = len(scaler_ms)
        out["scaler_ms"] = scaler_ms
        out["plain_step_ms"] = plain_ms
        out["scaler_median_ms"] = statistics.median(scaler_ms)
        out["plain_step_median_ms"] = statistics.median(plain_ms)
        out["overhead_ms"] = out["scaler_median_ms"] - out["plain_step_median_ms"]
    out["host_syncs_per_step"] = counter.count / out["steps_done"]
    out["host_syncs_counted"] = ("calls of torch.Tensor." + "/".join(SYNC_METHODS) +
                                 " during the timed steps (methods wrapped)" +
                                 ("; CUDA synchronising calls (set_sync_debug_mode warnings, 5 extra untimed steps): "
                                  "cuda_sync_warnings_per_step" if cuda else ""))
    out["checksum"] = {"inputs": input_checksum, "initial_loss": initial_loss,
                       "params_after_warmup": params_after_warmup,
                       "final_params": sum_of(model.parameters()), "final_scale": scaler.get_scale()}
    if cuda:
        extra = 5
        with SyncCounter(cuda=True) as cuda_counter:
            for _ in range(extra):
                if overhead_case:
                    scaled_step_timed()
                else:
                    train_step()
        out["cuda_sync_warnings_per_step"] = cuda_counter.cuda_sync_warnings / extra
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
