#pragma once
// Shared by the sampler and stepper tests: a small model with non-trivial weights, and prompts.

#include <cstdint>

#include <torch/torch.h>

#include "common/model/mmdit.hpp"

namespace spotlight::sampler::test {

// The micro MMDiT (vocabulary 40, 8 text tokens) with N(0, 0.05) weights drawn from `seed`.
inline model::MMDiT perturbed_model(uint64_t seed) {
  torch::manual_seed(seed);
  model::MMDiT m(model::mmdit_preset("micro").vocab_size(40).text_len(8));
  torch::NoGradGuard no_grad;
  for (auto& p : m->parameters())
    p.normal_(0.0, 0.05);
  return m;
}

// b distinct token rows for perturbed_model: [b, 8] int64.
inline at::Tensor tokens(int64_t b) {
  return torch::arange(b * 8, torch::kLong).view({b, 8}) % 40;
}

}  // namespace spotlight::sampler::test
