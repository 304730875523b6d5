"""torchao's MX quantization traced for tests/test_mx.cpp: to_mx and to_dtype of
torchao.prototype.mx_formats.mx_tensor, for every element format (FP8 E4M3, FP8 E5M2, FP4 E2M1 packed two a
byte), every ScaleCalculationMode (FLOOR, CEIL, EVEN, RCEIL) and several block sizes, on inputs chosen for
their edges: random normal and heavy-tailed values, a block of 31 ones and one 500, amax at the element
formats' edges, zeros, fp32 subnormals, values near fp32's maximum, inf and NaN, and bf16 input.

The C++ side quantizes the same bits with amp::mx_quantize and requires the same E8M0 scale bytes and element
bytes, and the same bits from amp::mx_dequantize as from to_dtype.
Usage: python tests/parity/torchao_mx_trace.py OUT.json [cpu|cuda]. Exits 3 (with one line) when torchao
cannot be imported.
"""
import json
import sys

import torch

import trace_args
from bit_patterns import bits, blocks_with_amax

try:
    import torchao
    from torchao.prototype.mx_formats.config import ScaleCalculationMode
    from torchao.prototype.mx_formats.mx_tensor import to_dtype, to_mx
except ImportError as e:
    print(f"torchao is not importable: {e}")
    sys.exit(3)

ELEMENTS = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2, "e2m1": torch.float4_e2m1fn_x2}
MODES = {"floor": ScaleCalculationMode.FLOOR, "ceil": ScaleCalculationMode.CEIL,
         "even": ScaleCalculationMode.EVEN, "rceil": ScaleCalculationMode.RCEIL}
SEED = 2026
INF, NAN = float("inf"), float("nan")


def inputs():
    """(name, tensor, block sizes): the cases."""
    g = torch.Generator().manual_seed(SEED)
    outlier = torch.ones(2, 32)
    outlier[0, 5] = 500.0  # the spec's rule saturates it; rounding the scale up does not
    outlier[1, 0] = -500.0
    # amax at each format's edges: its maximum, just above, 1.75 x 2^k, powers of two and just below.
    edges = [448.0, 449.0, 464.0, 480.0, 511.9, 512.0, 256.0, 255.9, 57344.0, 61440.0, 6.0, 6.5, 7.0, 8.0,
             1.0, 1.0000001, 0.75, 1.5, 1.75, 1.875, 1.9375, 3.0, 3.5, 2.0 ** 20 * 1.99]
    zeros = torch.zeros(3, 64)
    zeros[1] = -0.0
    zeros[2, ::2] = -0.0
    # fp32 subnormals and the smallest normals: scales clamped at E8M0's 2^-127 and fp32's 2^-126.
    exps = torch.tensor([-149, -140, -130, -127, -126, -122, -118, -117, -110, -100], dtype=torch.float)
    subnormal = torch.randn(len(exps), 32, generator=g) * torch.exp2(exps)[:, None]
    big = torch.randn(4, 32, generator=g) * 1e38
    big[0, 0] = torch.finfo(torch.float32).max
    big[1, 3] = -torch.finfo(torch.float32).max
    big[2] = big[2].clamp(-3e38, 3e38)
    nonfinite = torch.randn(6, 32, generator=g)
    nonfinite[0, 2] = INF
    nonfinite[1, 9] = -INF
    nonfinite[2, 4] = NAN
    nonfinite[3, 1], nonfinite[3, 30] = NAN, INF
    nonfinite[4] = NAN
    nonfinite[5, 0], nonfinite[5, 1] = INF, -INF
    heavy = torch.randn(8, 64, generator=g) * torch.exp2(torch.randint(-24, 24, (8, 64), generator=g).float())
    return [
        ("normal", torch.randn(4, 128, generator=g) * 3, [8, 16, 32, 64]),
        ("normal 3d", torch.randn(2, 3, 64, generator=g), [32]),
        ("outlier", outlier, [16, 32]),
        ("edges", blocks_with_amax(edges, 32), [16, 32]),
        ("zeros", zeros, [16, 32]),
        ("subnormal", subnormal, [16, 32]),
        ("near fp32 max", big, [16, 32]),
        ("inf and nan", nonfinite, [16, 32]),
        ("heavy-tailed", heavy, [16, 32]),
        ("bf16", (torch.randn(4, 64, generator=g) * 10).bfloat16(), [16, 32]),
    ]


def main(out_path, device):
    cases = []
    for name, x, block_sizes in inputs():
        x = x.to(device)
        out_dtype = torch.bfloat16 if x.dtype == torch.bfloat16 else torch.float32
        for block_size in block_sizes:
            for elem_name, elem in ELEMENTS.items():
                for mode_name, mode in MODES.items():
                    scale, data = to_mx(x, elem, block_size, mode)
                    back = to_dtype(data, scale, elem, block_size, out_dtype)
                    cases.append({"name": name, "block_size": block_size, "element": elem_name,
                                  "mode": mode_name, "dtype": str(x.dtype).removeprefix("torch."),
                                  "shape": list(x.shape), "x": bits(x), "scale_shape": list(scale.shape),
                                  "scales": bits(scale), "elements": bits(data), "dequantized": bits(back)})
    doc = {"torch_version": torch.__version__, "torchao_version": torchao.__version__, "device": device,
           "cases": cases}
    with open(out_path, "w") as f:
        json.dump(doc, f)


if __name__ == "__main__":
    main(*trace_args.parse())
