#include "common/rollout/rollout.hpp"

#include <stdexcept>

#include <torch/torch.h>

namespace spotlight::rollout {

std::vector<Rollout> split(const sampler::Trajectory& trajectory, StepWindow window,
                           std::int64_t weights_version) {
  const auto& latents = trajectory.latents;
  if (!latents.defined() || !trajectory.log_probs.defined() || latents.dim() < 2 ||
      latents.size(1) < window.end + 1 || trajectory.log_probs.size(1) < window.end) {
    throw std::invalid_argument(
        "rollout: the trajectory does not cover the trained steps (sample with "
        "keep_trajectory and the SDE)");
  }
  std::vector<Rollout> out;
  out.reserve(static_cast<std::size_t>(latents.size(0)));
  for (int64_t b = 0; b < latents.size(0); ++b) {
    Rollout r;
    r.latents = latents[b].slice(0, window.begin, window.end + 1).clone();
    r.log_probs = trajectory.log_probs[b].slice(0, window.begin, window.end).clone();
    r.window = window;
    r.weights_version = weights_version;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace spotlight::rollout
