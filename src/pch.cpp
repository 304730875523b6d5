// Gives the precompiled-header targets (amp_lab_pch: lab/libtorch.h's LibTorch headers;
// amp_lab_exercise_pch: runner/exercise_pch.h) a translation unit of their own; the header comes in as the
// precompiled one.
