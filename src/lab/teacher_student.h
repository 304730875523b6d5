// The data labs 09 (gradient accumulation) and 10 (gradient penalty) train on: a one-hidden-layer tanh
// MLP (the student) regresses the outputs of a teacher MLP with larger weights.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/nn/modules/container/sequential.h>  // not <torch/torch.h>: the exercises' header has only this part

namespace lab {

// A tanh MLP with these weights and biases (w1, b1, w2, b2), its sizes taken from them.
torch::nn::Sequential mlp_with(const std::vector<torch::Tensor>& p);

// A copy of the MLP with parameters of its own, in `dtype`.
torch::nn::Sequential copy_of(const torch::nn::Sequential& m, torch::ScalarType dtype = torch::kFloat);

// Its parameters, in order, as one flat float64 tensor: what the labs compare steps by.
torch::Tensor flat(const torch::nn::Sequential& m);

// The student's start (weights ~ N(0, 1/fan_in), zero biases) and a teacher with N(0, 1) weights and
// biases, whose larger outputs are the targets; then `batch` inputs. Drawn in this order, before any
// module is made (a Linear draws its own initial weights), so a seed gives the same data every time.
struct TeacherStudent {
  std::vector<torch::Tensor> start, teacher;
  torch::Tensor x;
};
TeacherStudent draw_teacher_student(torch::Device dev, int64_t in, int64_t hidden, int64_t out,
                                    torch::IntArrayRef batch);

}  // namespace lab
