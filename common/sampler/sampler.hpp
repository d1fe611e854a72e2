#pragma once
// Seeded sampling of the MMDiT: the ODE sampler (evaluation) and the Flow-GRPO SDE sampler
// (rollouts, with per-step log-probabilities). Sample b's noise is the Philox stream of seeds[b]:
// step 0 is the initial latent, step k+1 the eps of the step leaving grid point k. Same seed +
// same weights + same steps => the same trajectory bit for bit, whatever else is in the batch
// only when the batch composition is the same (BLAS results may depend on batch size).

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>

#include "common/model/mmdit.hpp"
#include "common/sampler/sampler_options.hpp"

namespace spotlight::sampler {

struct Trajectory {
  at::Tensor latents;    // [B, steps+1, C, H, W] when keep_trajectory, else [B, 1, C, H, W] (final)
  at::Tensor log_probs;  // [B, steps] (SDE only; undefined for ODE)
  at::Tensor final() const;  // [B, C, H, W]
};

// Where a sample starts: a fresh one (step 0 from its seed) or a committed in-flight state.
struct ResumePoint {
  at::Tensor latent;  // [B, C, H, W] at grid index `step`
  int step = 0;
};

// What a velocity model is conditioned on besides (x, t): the prompt encoding [B, L, D] and the
// pooled prompt vector [B, P] (the MMDiT's encode_text, or a user's precomputed embeddings).
struct Conditioning {
  at::Tensor text;
  at::Tensor pooled;
};

// Runs the sampler under NoGradGuard. `tokens` is [B, text_len] on the model's device.
Trajectory sample(model::MMDiT& model, const at::Tensor& tokens, const std::vector<uint64_t>& seeds,
                  const SamplerOptions& options,
                  const std::optional<ResumePoint>& resume = std::nullopt);

// The velocity the sampler integrates: model->forward_encoded by default; the sequence-parallel
// runtime substitutes its sharded forward (same contract, same result within float tolerance).
using VelocityFn = std::function<at::Tensor(const at::Tensor& x, const at::Tensor& t,
                                            const at::Tensor& text, const at::Tensor& pooled)>;
// As above with `velocity` in place of model->forward_encoded (`model` still encodes the text).
Trajectory sample(model::MMDiT& model, const VelocityFn& velocity, const at::Tensor& tokens,
                  const std::vector<uint64_t>& seeds, const SamplerOptions& options,
                  const std::optional<ResumePoint>& resume = std::nullopt);

class Stepper;  // common/sampler/stepper.hpp
// Runs `stepper` to the end under NoGradGuard; `keep_trajectory` keeps every latent.
Trajectory run_to_end(Stepper& stepper, bool keep_trajectory);

// Initial latents of the given seeds: [B, C, H, W].
at::Tensor initial_latents(const model::MMDiTOptions& model, const std::vector<uint64_t>& seeds,
                           const at::TensorOptions& options);
// The same for latents of `sample_shape` ({C, H, W}).
at::Tensor initial_latents(const std::vector<int64_t>& sample_shape,
                           const std::vector<uint64_t>& seeds, const at::TensorOptions& options);

// Latents [-1, 1] -> image values [0, 1], HWC float per sample on the CPU.
std::vector<std::vector<float>> to_images(const at::Tensor& latents);

}  // namespace spotlight::sampler
