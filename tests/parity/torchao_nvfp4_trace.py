"""torchao's NVFP4 quantization traced for tests/test_nvfp4.cpp: nvfp4_quantize, per_tensor_amax_to_scale and
NVFP4Tensor.dequantize of torchao.prototype.mx_formats.nvfp4_tensor, with block scales only and with the
per-tensor scale, on inputs chosen for their edges: random normal and heavy-tailed values, a block of 15 ones
and one outlier, block amaxes at E4M3's and E2M1's edges, zeros, values in E4M3's subnormal range and fp32's,
inf and NaN, and bf16 input.

The C++ side quantizes the same bits with amp::nvfp4_quantize and requires the same E4M3 scale bytes, packed
E2M1 element bytes and per-tensor scale bits, and the same bits from amp::nvfp4_dequantize as from
NVFP4Tensor.dequantize.
Usage: python tests/parity/torchao_nvfp4_trace.py OUT.json [cpu|cuda]. Exits 3 (with one line) when torchao
cannot be imported.
"""
import json
import sys

import torch

import trace_args
from bit_patterns import bits, blocks_with_amax

try:
    import torchao
    from torchao.prototype.mx_formats.nvfp4_tensor import NVFP4Tensor, nvfp4_quantize, per_tensor_amax_to_scale
except ImportError as e:
    print(f"torchao is not importable: {e}")
    sys.exit(3)

SEED = 2027
INF, NAN = float("inf"), float("nan")


def inputs():
    """(name, tensor): the cases, each 2-D (NVFP4Tensor.dequantize reads the last two dimensions)."""
    g = torch.Generator().manual_seed(SEED)
    outlier = torch.ones(2, 32)
    outlier[0, 5] = 500.0
    outlier[1, 20] = -3000.0
    # Block amaxes at the edges: E4M3's maximum times 6 and beyond (scale saturates at 448), E4M3's smallest
    # normal times 6 and below (scale clamped at 2^-6), scales halfway between two E4M3 values, E2M1's 6.
    edges = [2688.0, 2700.0, 5000.0, 0.09375, 0.09, 0.05, 0.001, 6.0, 6.5, 0.5625, 0.59375, 1.0, 7.0, 13.0,
             1e-6, 448.0]
    zeros = torch.zeros(3, 32)
    zeros[1] = -0.0
    zeros[2, ::2] = -0.0
    exps = torch.tensor([-149, -140, -126, -100, -20, -12, -9, -7, -6, -4], dtype=torch.float)
    subnormal = torch.randn(len(exps), 32, generator=g) * torch.exp2(exps)[:, None]
    big = torch.randn(3, 32, generator=g) * 1e38
    big[0, 0] = torch.finfo(torch.float32).max
    nonfinite = torch.randn(6, 32, generator=g)
    nonfinite[0, 2] = INF
    nonfinite[1, 9] = -INF
    nonfinite[2, 4] = NAN
    nonfinite[3, 1], nonfinite[3, 30] = NAN, INF
    nonfinite[4, :16] = NAN
    nonfinite[5, 0], nonfinite[5, 1] = INF, -INF
    heavy = torch.randn(8, 64, generator=g) * torch.exp2(torch.randint(-24, 24, (8, 64), generator=g).float())
    return [
        ("normal", torch.randn(4, 128, generator=g) * 3),
        ("normal 3d", torch.randn(2, 3, 64, generator=g)),
        ("outlier", outlier),
        ("edges", blocks_with_amax(edges, 16)),
        ("zeros", zeros),
        ("subnormal", subnormal),
        ("near fp32 max", big),
        ("inf and nan", nonfinite),
        ("heavy-tailed", heavy),
        ("bf16", (torch.randn(4, 64, generator=g) * 10).bfloat16()),
    ]


def main(out_path, device):
    cases = []
    for name, x, in inputs():
        x = x.to(device)
        for two_level in (False, True):
            per_tensor = per_tensor_amax_to_scale(torch.max(torch.abs(x))) if two_level else None
            scales, data = nvfp4_quantize(x, 16, per_tensor)
            case = {"name": name, "per_tensor": two_level, "dtype": str(x.dtype).removeprefix("torch."),
                    "shape": list(x.shape), "x": bits(x), "scale_shape": list(scales.shape),
                    "scales": bits(scales), "elements_shape": list(data.shape), "elements": bits(data),
                    "per_tensor_scale": bits(per_tensor) if two_level else []}
            if x.dim() == 2:
                q = NVFP4Tensor(data, scales.view(x.shape[0], -1), 16, x.dtype, per_tensor)
                case["dequantized"] = bits(q.dequantize(torch.float32))
            cases.append(case)
    doc = {"torch_version": torch.__version__, "torchao_version": torchao.__version__, "device": device,
           "cases": cases}
    with open(out_path, "w") as f:
        json.dump(doc, f)


if __name__ == "__main__":
    main(*trace_args.parse())
