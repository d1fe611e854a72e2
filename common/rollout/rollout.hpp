#pragma once
// A rollout as the clipped GRPO loss trains on it (docs/algorithm.md): one sample's latents on
// the trained SDE steps and the log-probabilities of those steps under the weights that sampled
// it ("old" in ratio = exp(logp_new - logp_old)), with the sample's reward. The trainer samples
// rollouts itself (on-policy) or reuses what exploration already sampled: the same seed with the
// same weights and step count is the same trajectory, and a trajectory sampled with older
// weights is trained on with the importance ratio against them (off-policy).

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "common/rollout/step_window.hpp"
#include "common/sampler/sampler.hpp"

namespace spotlight::rollout {

struct Rollout {
  at::Tensor latents;    // [W + 1, C, H, W]: x_{window.begin} .. x_{window.end}
  at::Tensor log_probs;  // [W]: log p(x_{j+1} | x_j) under weights_version
  StepWindow window;
  std::int64_t weights_version = 0;  // the weights that sampled it
  double reward = 0.0;
  bool correct = false;
};

// The rollouts of every sample of `trajectory` (sampled with keep_trajectory, SDE), cut to
// `window` and copied out of the batch tensors, so that each owns only its window. Rewards are
// left at 0.
std::vector<Rollout> split(const sampler::Trajectory& trajectory, StepWindow window,
                           std::int64_t weights_version);

}  // namespace spotlight::rollout
