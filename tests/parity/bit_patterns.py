"""What the torchao trace scripts in tests/parity share: a tensor's bit patterns for the JSON the C++ tests
read, and blocks built around a chosen amax."""
import torch


def bits(t):
    """The bit patterns of a tensor as integers: fp32 as int32, bf16 as int16, one-byte types as uint8."""
    t = t.detach().cpu().contiguous()
    view = {4: torch.int32, 2: torch.int16, 1: torch.uint8}[t.element_size()]
    return t.view(view).flatten().tolist()


def blocks_with_amax(amaxes, block_size):
    """One block per value: 0.1 everywhere, the value (and minus a third of it) at two positions."""
    x = torch.full((len(amaxes), block_size), 0.1)
    x[:, 3] = torch.tensor(amaxes)
    x[:, 7] = -torch.tensor(amaxes) / 3
    return x
