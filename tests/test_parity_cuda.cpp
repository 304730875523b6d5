// tests/test_parity.cpp's traces on CUDA: amp::GradScaler("cuda") against Python's
// torch.amp.GradScaler("cuda") on the same scripted runs (tests/parity/*.py with the device argument cuda).
// Built with a CUDA LibTorch only (tests/CMakeLists.txt); without a CUDA device each test prints "SKIPPED:
// ..." and ctest reports it skipped.
#define AMP_LAB_PARITY_CUDA 1
#include "test_parity.cpp"
