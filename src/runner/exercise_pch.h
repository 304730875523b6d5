// What every exercise's code compiles against: the model, optimizer and AMP headers nearly all of them use
// (sequential and linear modules, the optimizer, the autocast guard and the GradScaler). The exercises'
// precompiled header is this file. What fewer exercises need (autograd, losses, clipping, checkpoints,
// c10d, custom functions) comes in through their own includes: with GCC, a unit pays at its end for the
// templates its headers' inline code uses, precompiled or not, so a header in here that a unit does not
// include costs it that time for nothing, while parsing a header costs little. On a 2-core AMD EPYC
// (family 25, model 17), lab 09's amp.cpp compiles in 3.7 CPU s on this header and 4.8 on the earlier
// one, which held all of those too; lab 06's, which includes three of them itself, in 4.6 against 5.5.
#pragma once

#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/optimizer.h>

#include "amp/autocast.h"
#include "amp/grad_scaler.h"
