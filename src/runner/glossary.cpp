#include "runner/glossary.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <ostream>

#include "lab/text.h"

namespace runner {
namespace {

// Sources used by several terms.
constexpr const char* kAmpDocs =
    "PyTorch, Automatic Mixed Precision: https://docs.pytorch.org/docs/stable/amp.html";
constexpr const char* kAmpExamples =
    "PyTorch, AMP examples: https://docs.pytorch.org/docs/stable/notes/amp_examples.html";
constexpr const char* kMixedPrecisionPaper =
    "Micikevicius et al., Mixed Precision Training, ICLR 2018: https://arxiv.org/abs/1710.03740";
constexpr const char* kFp8Paper =
    "Micikevicius et al., FP8 Formats for Deep Learning, 2022: https://arxiv.org/abs/2209.05433";
constexpr const char* kFp8Primer =
    "NVIDIA Transformer Engine, Using FP8: "
    "https://docs.nvidia.com/deeplearning/transformer-engine/user-guide/examples/fp8_primer.html";
constexpr const char* kIeee754 =
    "IEEE 754-2019, Standard for Floating-Point Arithmetic: "
    "https://doi.org/10.1109/IEEESTD.2019.8766229";
constexpr const char* kGoldberg =
    "Goldberg, What Every Computer Scientist Should Know About Floating-Point Arithmetic, 1991: "
    "https://docs.oracle.com/cd/E19957-01/806-3568/ncg_goldberg.html";
constexpr const char* kDistributed =
    "PyTorch, Distributed communication package: https://docs.pytorch.org/docs/stable/distributed.html";
constexpr const char* kAutograd =
    "PyTorch, Automatic differentiation: https://docs.pytorch.org/docs/stable/autograd.html";
constexpr const char* kNn = "PyTorch, torch.nn: https://docs.pytorch.org/docs/stable/nn.html";
constexpr const char* kOptim = "PyTorch, torch.optim: https://docs.pytorch.org/docs/stable/optim.html";

// The definitions say what a term is. None may say why a quiz answer holds (tests/test_glossary.cpp scores
// every gloss against every question's answer, as the quiz's own leak check does).
// A table rather than a function: it is data. Read only through glossary(), after static initialisation.
const Term kTerms[] = {
    {"all-reduce",
     {"allreduce", "all_reduce", "all-reduced", "all-reduces", "all-reducing"},
     "a collective that combines a tensor over ranks, result on all",
     kDistributed},
    {"amax", {"amax history", "amaxes"}, "the largest absolute value in a tensor, max |x|", kFp8Primer},
    {"AMP",
     {"automatic mixed precision"},
     "automatic mixed precision (torch.amp in PyTorch)",
     kAmpDocs,
     /*exact_case=*/true},
    {"Adam",
     {},
     "an optimizer with running averages of each gradient and its square",
     "Kingma and Ba, Adam: A Method for Stochastic Optimization, 2015: https://arxiv.org/abs/1412.6980"},
    {"AdamW",
     {},
     "Adam with weight decay applied to the weights directly",
     "Loshchilov and Hutter, Decoupled Weight Decay Regularization, 2019: "
     "https://arxiv.org/abs/1711.05101"},
    {"AMX",
     {"Advanced Matrix Extensions"},
     "Advanced Matrix Extensions: Intel Xeon tiles for bf16 and int8 matmuls",
     "Intel, AMX: https://www.intel.com/content/www/us/en/products/docs/accelerator-engines/"
     "advanced-matrix-extensions/overview.html"},
    {"ATen",
     {},
     "PyTorch's C++ tensor library, where operators are defined",
     "PyTorch C++ API: https://docs.pytorch.org/cppdocs/"},
    {"autocast",
     {"torch.autocast", "amp::Autocast"},
     "torch.autocast (amp::Autocast in C++): per-op dtypes for one device",
     kAmpDocs},
    {"autograd",
     {"autograd::grad", "autograd.grad"},
     "PyTorch's automatic differentiation: it records ops, then backward",
     kAutograd},
    {"AVX-512",
     {"avx512", "avx512_bf16", "avx512_fp16", "AVX512"},
     "x86 512-bit vector instructions (avx512_bf16: ones for bf16 values)",
     "Intel 64 and IA-32 Architectures Software Developer's Manual: "
     "https://www.intel.com/content/www/us/en/developer/articles/technical/intel-sdm.html"},
    {"backward",
     {"backward pass", "backward()"},
     "the pass that computes the loss's gradients, output to parameters",
     kAutograd},
    {"backoff factor",
     {"backoff_factor", "back-off", "backoff", "back-offs", "backed off", "backs off"},
     "a GradScaler's factor on its scale after an inf/NaN step",
     kAmpDocs},
    {"bf16",
     {"bfloat16", "kBFloat16"},
     "bfloat16, a two-byte floating-point format from Google Brain",
     "Google Cloud, The bfloat16 numerical format: https://cloud.google.com/tpu/docs/bfloat16"},
    {"binade",
     {},
     "the numbers from one power of two to the next, [2^e, 2^(e+1))",
     "Muller et al., Handbook of Floating-Point Arithmetic, 2nd ed., Birkhauser 2018"},
    {"bitwise equal",
     {"bitwise", "bit for bit", "bitwise identical"},
     "identical in every bit of every value, not merely close",
     ""},
    {"c10d", {}, "PyTorch's distributed library (torch.distributed) in C++", kDistributed},
    {"cast_inputs", {}, "a dtype argument of torch.amp.custom_fwd (and amp::CustomFwd)", kAmpDocs},
    {"checkpoint",
     {"checkpointed"},
     "a file of the training state from which a run can resume",
     "PyTorch, Saving and loading a general checkpoint: "
     "https://docs.pytorch.org/tutorials/recipes/recipes/saving_and_loading_a_general_checkpoint.html"},
    {"CUDA",
     {},
     "NVIDIA's platform for GPU programs; PyTorch's NVIDIA device type",
     "NVIDIA CUDA documentation: https://docs.nvidia.com/cuda/"},
    {"cuBLAS",
     {},
     "NVIDIA's CUDA library of dense linear algebra",
     "NVIDIA cuBLAS: https://docs.nvidia.com/cuda/cublas/"},
    {"current scaling", {}, "FP8 scaling from the tensor's amax in the same step", kFp8Primer},
    {"custom_fwd",
     {"custom_bwd", "custom_fwd/custom_bwd", "CustomFwd", "CustomBwd", "amp::CustomFwd", "amp::CustomBwd",
      "CustomFwd/CustomBwd"},
     "torch.amp's decorators for a custom autograd Function",
     kAmpDocs},
    {"DDP",
     {"DistributedDataParallel"},
     "DistributedDataParallel: a model replica per rank, gradients averaged",
     "PyTorch, Distributed Data Parallel: https://docs.pytorch.org/docs/stable/notes/ddp.html"},
    {"delayed scaling", {}, "FP8 scaling from the amax of earlier steps (an amax history)", kFp8Primer},
    {"dL/dy",
     {"dL/dy1", "dL/dy2", "dL/dy3"},
     "the derivative of the loss L with respect to a layer's output y",
     kAutograd},
    {"dtype",
     {"scalar type", "ScalarType"},
     "the element type of a tensor (a float format, an integer, bool)",
     "PyTorch, Tensor Attributes: https://docs.pytorch.org/docs/stable/tensor_attributes.html"},
    {"E4M3",
     {"E4M3fn", "Float8_e4m3fn"},
     "an 8-bit float with 4 exponent, 3 mantissa bits (E4M3fn: no inf)",
     kFp8Paper},
    {"E5M2",
     {"Float8_e5m2"},
     "an 8-bit floating-point format with 5 exponent and 2 mantissa bits",
     kFp8Paper},
    {"effective batch", {}, "the micro-batches accumulated together, taken as one batch", kAmpExamples},
    {"epsilon",
     {"eps", "machine epsilon"},
     "the gap between 1 and the next larger number of a format",
     kGoldberg},
    {"exponent", {"exponent bits"}, "the part of a float that gives its power of two", kIeee754},
    {"flush to zero",
     {"flush", "flushes", "flushed", "flushing", "flush-to-zero", "flushed to zero"},
     "to replace a value too small for a format by exactly 0",
     kIeee754},
    {"forward",
     {"forward pass", "forward()"},
     "the pass that computes a model's outputs and the loss from its inputs",
     kAutograd},
    {"found_inf",
     {},
     "a GradScaler's flag: the gradients it unscaled held an inf or NaN",
     "PyTorch, torch/amp/grad_scaler.py"},
    {"fp16",
     {"float16", "kHalf", "half precision"},
     "IEEE 754 binary16, a two-byte floating-point format",
     kIeee754},
    {"FP8", {"float8"}, "one-byte floating-point formats, E4M3 and E5M2", kFp8Paper},
    {"fp32",
     {"float32", "kFloat", "single precision"},
     "IEEE 754 binary32, a four-byte float, PyTorch's default",
     kIeee754},
    {"fp64",
     {"float64", "kDouble", "double precision"},
     "IEEE 754 binary64, an eight-byte float; the labs' reference",
     kIeee754},
    {"FSDP",
     {"FullyShardedDataParallel"},
     "FullyShardedDataParallel: parameters, grads and state sharded over ranks",
     "PyTorch, FullyShardedDataParallel: https://docs.pytorch.org/docs/stable/fsdp.html"},
    {"GFLOP/s", {"GFLOPS", "GFLOP"}, "billions of floating-point operations per second", ""},
    {"Gloo",
     {},
     "a collective communications library, c10d's CPU backend (TCP)",
     "https://github.com/pytorch/gloo"},
    {"gradient accumulation",
     {"accumulate gradients", "accumulated gradients"},
     "summing several passes' gradients before a step",
     kAmpExamples},
    {"gradient clipping",
     {"clip_grad_norm_", "clip", "clipping", "clipped"},
     "shrinking gradients to a total norm at most a bound",
     "PyTorch, clip_grad_norm_: "
     "https://docs.pytorch.org/docs/stable/generated/torch.nn.utils.clip_grad_norm_.html"},
    {"gradient penalty", {}, "a loss term on the gradients' norm (autograd.grad)", kAmpExamples},
    {"GradScaler",
     {"torch.amp.GradScaler", "amp::GradScaler", "scaler"},
     "PyTorch's loss-scaling object (amp::GradScaler in C++)",
     kAmpDocs},
    {"growth factor",
     {"growth_factor"},
     "what a GradScaler multiplies its scale by when it grows it (2)",
     kAmpDocs},
    {"growth interval",
     {"growth_interval"},
     "clean steps a GradScaler waits before growing its scale",
     kAmpDocs},
    {"inf",
     {"infinity", "infinities", "+inf", "-inf"},
     "infinity, what a result too large for the format becomes",
     kIeee754},
    {"kernel",
     {},
     "the compiled routine of one operation on a device",
     "PyTorch C++ API: https://docs.pytorch.org/cppdocs/"},
    {"LibTorch",
     {},
     "PyTorch's C++ distribution: headers and libraries",
     "PyTorch C++ API: https://docs.pytorch.org/cppdocs/"},
    {"Linear", {"nn::Linear", "torch.nn.Linear", "linear"}, "a fully connected layer, y = x W^T + b", kNn},
    {"loss scale",
     {"loss scaling", "loss-scaling", "loss scaler"},
     "the factor the loss is multiplied by before backward",
     kMixedPrecisionPaper},
    {"lr", {"learning rate"}, "the learning rate, the factor on every change an optimizer makes", kOptim},
    {"mantissa",
     {"significand", "mantissa bits"},
     "the part of a float that holds its significant digits",
     kIeee754},
    {"master weights",
     {"master weight", "master copy", "master copies", "fp32 master"},
     "an fp32 copy of the parameters, beside their 16-bit copy",
     kMixedPrecisionPaper},
    {"matmul", {"at::matmul", "torch.matmul", "mm", "GEMM"}, "matrix multiplication", kNn},
    {"micro-batch",
     {"microbatch", "micro batch"},
     "one part of a batch, given its own forward and backward pass",
     kAmpExamples},
    {"mixed precision",
     {"mixed-precision"},
     "training with more than one floating-point format",
     kMixedPrecisionPaper},
    {"MLP",
     {"multilayer perceptron"},
     "multilayer perceptron: Linear layers with nonlinearities between them",
     kNn},
    {"MSE", {"mean squared error", "mse_loss"}, "mean squared error, the mean of (output - target)^2", kNn},
    {"NaN", {"not a number"}, "not a number: the value of an undefined result such as 0/0", kIeee754},
    {"NCCL",
     {},
     "NVIDIA's collective communications library, c10d's GPU backend",
     "NVIDIA NCCL: https://developer.nvidia.com/nccl"},
    {"numeric_limits",
     {"std::numeric_limits"},
     "C++'s properties of a number type: max, min, epsilon, ...",
     "cppreference: https://en.cppreference.com/w/cpp/types/numeric_limits"},
    {"oneDNN",
     {"MKL-DNN", "mkldnn"},
     "Intel's library of deep-learning kernels, used by PyTorch on CPUs",
     "https://github.com/uxlfoundation/oneDNN"},
    {"overflow",
     {"overflows", "overflowed", "overflowing"},
     "a result too large in magnitude for a format, which becomes inf",
     kIeee754},
    {"process group",
     {"process_group", "ProcessGroup"},
     "c10d's handle for a set of ranks that run collectives together",
     kDistributed},
    {"rank", {"world size", "WORLD_SIZE"}, "one process of a distributed job, numbered from 0", kDistributed},
    {"replica",
     {},
     "a rank's own whole copy of the model in data parallelism",
     "PyTorch, Distributed Data Parallel: https://docs.pytorch.org/docs/stable/notes/ddp.html"},
    {"round to nearest even",
     {"ties to even", "ties round to even", "round to even", "round-to-nearest-even"},
     "IEEE 754's default: nearest value, ties to even",
     kIeee754},
    {"_scaled_mm",
     {"at::_scaled_mm", "torch._scaled_mm", "scaled_mm"},
     "PyTorch's private matrix multiplication of FP8 tensors",
     "PyTorch, aten/src/ATen/native/Blas.cpp"},
    {"SGD", {"stochastic gradient descent"}, "stochastic gradient descent: w -= lr x gradient", kOptim},
    {"shard", {"sharded", "sharding"}, "the part of a tensor or state that one rank holds", kDistributed},
    {"ShardedGradScaler",
     {},
     "the GradScaler that PyTorch provides for FSDP",
     "PyTorch, torch/distributed/fsdp/sharded_grad_scaler.py"},
    {"split-K",
     {"splitK"},
     "a matmul whose inner (K) dimension is split into chunks, then summed",
     "NVIDIA CUTLASS, Efficient GEMM: "
     "https://github.com/NVIDIA/cutlass/blob/main/media/docs/efficient_gemm.md"},
    {"subnormal",
     {"denormal", "denormalized"},
     "a nonzero value below the smallest normal, with fewer digits",
     kIeee754},
    {"Tensor Core",
     {},
     "an NVIDIA GPU unit (Volta on) for small matrix multiply-adds",
     "NVIDIA, CUDA C++ Programming Guide, Warp Matrix Functions: "
     "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#warp-matrix-functions"},
    {"TF32",
     {"TensorFloat-32"},
     "TensorFloat-32: float32 matmuls on 10-bit mantissas (NVIDIA Ampere on)",
     "PyTorch, TensorFloat-32 on Ampere and later devices: "
     "https://docs.pytorch.org/docs/stable/notes/"
     "cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices"},
    {"ulp",
     {"unit in the last place"},
     "unit in the last place: the gap to the next number of the format",
     kGoldberg},
    {"underflow",
     {"underflows", "underflowed", "underflowing"},
     "a result too small for a format's normal numbers",
     kIeee754},
    {"unscale",
     {"unscale_", "unscaled", "unscaling"},
     "to divide gradients by the loss scale: GradScaler.unscale_(optimizer)",
     kAmpDocs},
    {"ZeRO",
     {"Zero Redundancy Optimizer"},
     "DeepSpeed's data parallelism that splits optimizer state over ranks",
     "Rajbhandari et al., ZeRO: Memory Optimizations Toward Training Trillion Parameter Models, 2020: "
     "https://arxiv.org/abs/1910.02054",
     /*exact_case=*/true},
};

std::vector<Term> sorted_terms() {
  std::vector<Term> terms(std::begin(kTerms), std::end(kTerms));
  std::sort(terms.begin(), terms.end(), [](const Term& a, const Term& b) {
    const auto lower = [](std::string s) {  // "_scaled_mm" sorts under s
      s.erase(0, s.find_first_not_of("_:."));
      std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
      return s;
    };
    return lower(a.name) < lower(b.name);
  });
  return terms;
}

bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

char lower(char c) {
  return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

// `text` with every run of blanks (line breaks and indents of a wrapped line) as one space, and without
// colour codes ("\x1b[1m"), so that a term in bold is found like any other.
std::string one_line(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
      const size_t end = text.find_first_not_of("0123456789;", i + 2);
      if (end != std::string_view::npos && text[end] == 'm') {
        i = end;
        continue;
      }
    }
    const bool blank = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (!blank)
      out += c;
    else if (!out.empty() && out.back() != ' ')
      out += ' ';
  }
  return out;
}

bool same(char a, char b, bool exact_case) {
  return exact_case ? a == b : lower(a) == lower(b);
}

// Where `form` first occurs in `text` as a whole word, a plural "s" or "es" allowed; npos when nowhere. A
// form that starts or ends with a character that is not part of a word ("+inf") needs no boundary there.
size_t find_word(const std::string& text, const std::string& form, bool exact_case) {
  if (form.empty()) return std::string::npos;
  const auto boundary = [&](size_t i) { return i >= text.size() || !is_word_char(text[i]); };
  for (size_t at = 0; at + form.size() <= text.size(); ++at) {
    if (at > 0 && is_word_char(form.front()) && is_word_char(text[at - 1])) continue;
    size_t k = 0;
    while (k < form.size() && same(text[at + k], form[k], exact_case)) ++k;
    if (k < form.size()) continue;
    const size_t end = at + form.size();
    if (!is_word_char(form.back()) || boundary(end)) return at;
    if (end < text.size() && lower(text[end]) == 's' && boundary(end + 1)) return at;
    if (end + 1 < text.size() && lower(text[end]) == 'e' && lower(text[end + 1]) == 's' && boundary(end + 2))
      return at;
  }
  return std::string::npos;
}

}  // namespace

const std::vector<Term>& glossary() {
  static const std::vector<Term> terms = sorted_terms();
  return terms;
}

const Term* find_term(std::string_view word) {
  const std::string w = one_line(word);
  for (const auto& t : glossary()) {
    const auto matches = [&](const std::string& form) {  // the whole of `w`, with a plural at most
      if (w.size() < form.size() || find_word(w, form, t.exact_case) != 0) return false;
      const std::string rest = w.substr(form.size());
      return rest.empty() || ((rest == "s" || rest == "es") && is_word_char(form.back()));
    };
    if (matches(t.name) || std::any_of(t.variants.begin(), t.variants.end(), matches)) return &t;
  }
  return nullptr;
}

std::vector<const Term*> terms_in(std::string_view text) {
  const std::string flat = one_line(text);
  std::vector<std::pair<size_t, const Term*>> found;
  for (const auto& t : glossary()) {
    size_t first = find_word(flat, t.name, t.exact_case);
    for (const auto& v : t.variants) first = std::min(first, find_word(flat, v, t.exact_case));
    if (first != std::string::npos) found.emplace_back(first, &t);
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<const Term*> terms;
  for (const auto& [at, t] : found) terms.push_back(t);
  return terms;
}

std::vector<const Term*> new_terms(std::string_view text, std::set<std::string>& glossed) {
  std::vector<const Term*> fresh;
  for (const Term* t : terms_in(text))
    if (glossed.insert(t->name).second) fresh.push_back(t);
  return fresh;
}

std::string format_glosses(const std::vector<const Term*>& terms, size_t width) {
  std::string out;
  for (const Term* t : terms)
    for (const auto& line : lab::wrap_lines(t->name + ": " + t->definition, width, "  ", "      "))
      out += line + "\n";
  return out;
}

void print_glossary(std::ostream& out, size_t width, bool color) {
  const lab::Style style{color};
  out << style.bold("Glossary") << "\n";
  for (const auto& line :
       lab::wrap_lines("Every term the labs use, with a one-line definition and where it comes "
                       "from. The quiz glosses each the first time a lab shows it.",
                       width))
    out << line << "\n";
  for (const auto& t : glossary()) {
    out << "\n";
    const auto lines = lab::wrap_lines(t.definition, width, t.name + ": ", "    ");
    for (size_t k = 0; k < lines.size(); ++k)
      out << (k == 0 ? style.bold(t.name + ":") + lines[k].substr(t.name.size() + 1) : lines[k]) << "\n";
    if (!t.source.empty())
      for (const auto& line : lab::wrap_lines(t.source, width, "    source: ", "      "))
        out << style.dim(line) << "\n";
  }
}

}  // namespace runner
