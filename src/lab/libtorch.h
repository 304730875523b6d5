// The parts of LibTorch the labs, the lab framework, the benchmark and the tests use, included in place of
// <torch/torch.h>; its #include lines are also their precompiled header (src/CMakeLists.txt). GCC
// instantiates, in every unit built on a precompiled header, the templates that header leaves pending,
// whether the unit uses them or not: on <torch/torch.h>, with its data loaders, JIT, FFT and hundred-odd
// modules, an empty file takes 4.8 s to compile at -O3; on these headers, 2.5 s (BENCHMARKS.md, "Cold
// build"). A unit that included <torch/torch.h> on top of them would parse the rest of it again: include
// this one instead.
#pragma once

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/autograd.h>
#include <torch/cuda.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/loss.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <torch/serialize.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <torch/version.h>
