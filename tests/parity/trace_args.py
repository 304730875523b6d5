"""The command line every trace script in tests/parity takes: OUT.json [DEVICE], DEVICE cpu (the default) or cuda.

Bad arguments, or cuda on a torch that sees no CUDA device, end the script with one line and exit code 1.
"""
import sys

import torch

DEVICES = ("cpu", "cuda")


def parse(argv=None):
    """(out_path, device) from the command line."""
    argv = sys.argv if argv is None else argv
    name = argv[0].rsplit("/", 1)[-1]
    if len(argv) not in (2, 3):
        sys.exit(f"usage: {name} OUT.json [{'|'.join(DEVICES)}]")
    device = argv[2] if len(argv) == 3 else "cpu"
    if device not in DEVICES:
        sys.exit(f"{name}: the device must be one of {', '.join(DEVICES)}, not {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        sys.exit(f"{name}: cuda asked for, but torch {torch.__version__} sees no CUDA device")
    return argv[1], device
