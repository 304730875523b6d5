"""mmaemu's FP8 accumulators traced for tests/lab20_fp8_accumulator_test.cpp: mmaemu.accumulate, the FP32
accumulator of an E4M3 GEMM a [M, K] x b [N, K]^T before the scales, as an H100 PCIe's cuBLAS computes it
(mmaemu 0.1.0's default profile, `hopper`), with fast accumulation (one chain over K in the tensor core)
and without (chains of 128, each added to an FP32 total).

Unsplit cases (splitk=1): the shapes and Ks of lab 20 and inputs chosen for their edges (zero-mean values,
subnormals, zeros, E4M3's largest values, exponents far apart). Cases with the H100's own split-K decision
(mmaemu's table; `explain` gives it): 64 x 64 at K = 4096 (unsplit) and 16384 (split 6 ways).
The C++ side runs lab 20's model (lab20::TensorCore::chain, lab20::promoted_gemm) on the same codes.
Usage: python tests/parity/mmaemu_accumulate_trace.py OUT.json [cpu]. Exits 3 (with one line) when mmaemu
cannot be imported.
"""
import json
import sys
import warnings

import torch

import trace_args

try:
    import mmaemu
except ImportError as e:
    print(f"mmaemu is not importable: {e}")
    sys.exit(3)

E4M3 = torch.float8_e4m3fn
SEED = 2026


def codes(t):
    """E4M3 codes as one hex string, row-major."""
    return t.contiguous().view(torch.uint8).numpy().tobytes().hex()


def bits(t):
    """fp32 bit patterns as integers."""
    return t.contiguous().view(torch.int32).flatten().tolist()


def scaled(x):
    """x scaled so that its amax is E4M3's largest value, then cast (as a per-tensor current scale)."""
    return (x / (x.abs().max() / 448)).to(E4M3)


def inputs(g):
    """(name, a, b, splitk): the cases."""
    uniform = lambda m, k: scaled(torch.rand(m, k, generator=g))
    normal = lambda m, k: scaled(torch.randn(m, k, generator=g))
    # Exponents far apart: products 2^-18 to 2^17 in one block, the accumulator's alignment at its widest.
    spread = torch.randn(16, 256, generator=g) * torch.exp2(torch.randint(-9, 9, (16, 256), generator=g).float())
    spread = spread.clamp(-448, 448).to(E4M3)
    subnormal = (torch.rand(16, 256, generator=g) * 2.0 ** -6).to(E4M3)  # E4M3's subnormal range
    zeros = normal(16, 256)
    zeros[:, ::3] = 0
    zeros[0] = 0  # a row of zeros: +0 results
    largest = torch.full((16, 256), 448.0).to(E4M3)
    largest[:, 1::2] = -448.0  # exact cancellation at every other step
    return [
        ("uniform K=512", uniform(16, 512), uniform(16, 512), 1),
        ("uniform K=4096", uniform(16, 4096), uniform(16, 4096), 1),
        ("uniform K=16384", uniform(16, 16384), uniform(16, 16384), 1),
        ("normal K=4096", normal(16, 4096), normal(16, 4096), 1),
        ("spread exponents", spread, normal(16, 256), 1),
        ("subnormals", subnormal, uniform(16, 256), 1),
        ("zeros", zeros, normal(16, 256), 1),
        ("largest, alternating", largest, scaled(torch.ones(16, 256)), 1),
        ("H100 64x64 K=4096", uniform(64, 4096), uniform(64, 4096), "auto"),
        ("H100 64x64 K=16384", uniform(64, 16384), uniform(64, 16384), "auto"),
    ]


def main():
    out, device = trace_args.parse()
    if device != "cpu":
        sys.exit("mmaemu_accumulate_trace.py: the CPU only")
    warnings.simplefilter("ignore")
    g = torch.Generator().manual_seed(SEED)
    cases = []
    one = torch.ones(1)
    for name, a, b, splitk in inputs(g):
        case = {"name": name, "m": a.shape[0], "n": b.shape[0], "k": a.shape[1], "a": codes(a), "b": codes(b)}
        for key, fast in (("fast", True), ("slow", False)):
            plan = mmaemu.explain(a, b.t(), one, one, out_dtype=torch.float32, use_fast_accum=fast, splitk=splitk)
            case[key + "_splits"] = plan.split.S
            case[key] = bits(mmaemu.accumulate(a, b, use_fast_accum=fast, splitk=splitk))
        cases.append(case)
    with open(out, "w") as f:
        json.dump({"mmaemu_version": mmaemu.__version__, "profile": "hopper", "cases": cases}, f)


main()
