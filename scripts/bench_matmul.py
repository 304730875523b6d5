#!/usr/bin/env python3
"""Times an n x n x n torch.matmul per dtype and prints JSON: the throughput figures BENCHMARKS.md quotes.

  bench_matmul.py [--device cpu|cuda] [--n N] [--dtypes fp32,tf32,fp16,bf16] [--reps N] [--seed N]

fp32 is strict FP32 (torch.backends.cuda.matmul.allow_tf32 = False, PyTorch's default for matmul); tf32
is the same fp32 matmul with allow_tf32 = True (CUDA only: TF32 is a Tensor Core mode). fp16 and bf16
multiply tensors of that dtype. Each dtype: 3 untimed warm-up products, then --reps timed ones (CUDA:
synchronized before and after each); the median gives TFLOP/s = 2 n^3 / seconds / 1e12.
Defaults: n 8192 on CUDA (the H200 figures of BENCHMARKS.md), 512 on the CPU.
"""
import argparse
import json
import platform
import statistics
import time

import torch

DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def time_matmul(a, b, reps, cuda):
    for _ in range(3):
        a @ b
    if cuda:
        torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        a @ b
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--dtypes", default="fp32,tf32,fp16,bf16")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    cuda = args.device == "cuda"
    n = args.n or (8192 if cuda else 512)
    torch.manual_seed(args.seed)
    a32 = torch.randn(n, n).to(args.device)
    b32 = torch.randn(n, n).to(args.device)
    rows = []
    for name in args.dtypes.split(","):
        if name not in DTYPES:
            raise SystemExit(f"bench_matmul.py: unknown dtype '{name}' (fp32, tf32, fp16, bf16)")
        if name == "tf32" and not cuda:
            rows.append({"dtype": name, "skipped": "TF32 is a CUDA Tensor Core mode"})
            continue
        if cuda:
            torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
        dt = DTYPES[name]
        s = time_matmul(a32.to(dt), b32.to(dt), args.reps, cuda)
        rows.append({"dtype": name, "seconds": s, "tflops": 2 * n**3 / s / 1e12})
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = False
    device_name = torch.cuda.get_device_name() if cuda else cpu_name()
    print(json.dumps({"device": args.device, "device_name": device_name, "n": n, "torch": torch.__version__,
                      "cuda": torch.version.cuda, "threads": torch.get_num_threads(), "results": rows},
                     indent=1))


if __name__ == "__main__":
    main()
