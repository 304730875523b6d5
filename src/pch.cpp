// Gives the precompiled-header target (amp_lab_pch, <torch/torch.h>) a translation unit of its own.
#include <torch/torch.h>
