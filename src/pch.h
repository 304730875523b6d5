// Precompiled once (CMake target amp_lab_pch) and reused by every LibTorch translation unit.
#pragma once
#include <torch/torch.h>
