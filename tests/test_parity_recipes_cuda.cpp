// tests/test_parity_recipes.cpp's recipes on CUDA (fp16 autocast, amp::GradScaler("cuda"),
// CustomFwd/CustomBwd for CUDA) against Python's torch.amp on CUDA. Built with a CUDA LibTorch only
// (tests/CMakeLists.txt); without a CUDA device each test prints "SKIPPED: ..." and ctest reports it skipped.
#define AMP_LAB_PARITY_CUDA 1
#include "test_parity_recipes.cpp"
