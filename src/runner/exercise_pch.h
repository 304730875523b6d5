// What an exercise's code compiles against: the parts of LibTorch a lab's AMP code uses (modules, losses,
// optimizers, autograd, ATen) and the amp library. The exercises' precompiled header is this file. It
// leaves out the rest of <torch/torch.h> (data loaders, JIT, FFT, ...), which a learner's file does not
// need and whose loading made every check about 2 s slower; an exercise's context header includes this
// in place of <torch/torch.h>.
#pragma once

#include <torch/autograd.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/loss.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/optimizer.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "amp/autocast.h"
#include "amp/checkpoint.h"
#include "amp/custom_function.h"
#include "amp/device_caps.h"
#include "amp/distributed.h"
#include "amp/grad_scaler.h"
