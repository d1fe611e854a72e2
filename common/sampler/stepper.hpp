#pragma once
// Stepper: the sampler of common/sampler/sampler.hpp one grid step at a time, so a caller can stop
// at any step boundary (a preemption notice) and hand latent() + step() to another process, which
// continues with a Stepper built from that ResumePoint. sample() is a Stepper run to the end, so
//
//   Stepper a(model, tokens, seeds, options);  while (a.step() < k) a.advance();
//   Stepper b(model, tokens, seeds, options, ResumePoint{a.latent(), a.step()});
//   while (!b.done()) b.advance();
//
// gives b.latent() bit-equal to sample(model, tokens, seeds, options).final() for the same batch
// composition (the noise of step k is a function of (seed, k) alone; BLAS results may depend on
// the batch size, so only the same batch of samples is bit-reproducible).
//
// Not thread-safe; the model must outlive the Stepper.

#include <cstdint>
#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>

#include "common/model/mmdit.hpp"
#include "common/sampler/sampler.hpp"
#include "common/sampler/sampler_options.hpp"

namespace spotlight::sampler {

// What a Stepper integrates: `velocity(x, t, condition.text, condition.pooled)` on latents of
// `sample_shape` ({C, H, W}) with `tensor_options` (device, dtype).
struct StepperInput {
  VelocityFn velocity;
  Conditioning condition;
  std::vector<int64_t> sample_shape;
  at::TensorOptions tensor_options;
};

class Stepper {
 public:
  // Starts at grid index 0 from the seeds' initial latents, or at `start`. Throws
  // std::invalid_argument when start->step is not in [0, options.steps] or start->latent is not
  // [seeds.size(), C, H, W] of the model.
  // `velocity` replaces model->forward_encoded when set (e.g. the SP group's sharded forward).
  Stepper(model::MMDiT& model, const at::Tensor& tokens, std::vector<uint64_t> seeds,
          const SamplerOptions& options, const std::optional<ResumePoint>& start = std::nullopt,
          VelocityFn velocity = {});
  // Any velocity model (StepperInput below). The same noise, grid and steps as above; the same
  // checks of `start`.
  Stepper(StepperInput input, std::vector<uint64_t> seeds, const SamplerOptions& options,
          const std::optional<ResumePoint>& start = std::nullopt);

  int step() const { return step_; }  // grid index of latent()
  int steps() const { return options_.steps; }
  bool done() const { return step_ >= options_.steps; }
  const at::Tensor& latent() const { return x_; }  // [B, C, H, W] at grid index step()

  // One step from step() to step() + 1. Returns the per-sample log-probability [B] of the SDE
  // step, or an undefined tensor for an ODE step. Throws std::logic_error when done().
  at::Tensor advance();

 private:
  VelocityFn velocity_;
  std::vector<uint64_t> seeds_;
  SamplerOptions options_;
  std::vector<double> grid_;
  at::TensorOptions tensor_options_;
  std::vector<int64_t> sample_shape_;
  at::Tensor text_;
  at::Tensor pooled_;
  at::Tensor x_;
  int step_ = 0;
};

}  // namespace spotlight::sampler
