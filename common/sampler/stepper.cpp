#include "common/sampler/stepper.hpp"

#include <stdexcept>
#include <string>

#include <torch/torch.h>

#include "common/sampler/flow_step.hpp"
#include "kernels/philox/noise.hpp"

namespace spotlight::sampler {

namespace {

VelocityFn model_velocity(model::MMDiT& model, VelocityFn velocity) {
  if (velocity) return velocity;
  return [model](const at::Tensor& x, const at::Tensor& t, const at::Tensor& text,
                 const at::Tensor& pooled) mutable {
    return model->forward_encoded(x, t, text, pooled);
  };
}

Conditioning encode(model::MMDiT& model, const at::Tensor& tokens) {
  torch::NoGradGuard no_grad;
  auto [text, pooled] = model->encode_text(tokens);
  return Conditioning{text, pooled};
}

std::vector<int64_t> model_sample_shape(const model::MMDiT& model) {
  const auto& m = model->options();
  return {m.channels(), m.image_size(), m.image_size()};
}

}  // namespace

Stepper::Stepper(model::MMDiT& model, const at::Tensor& tokens, std::vector<uint64_t> seeds,
                 const SamplerOptions& options, const std::optional<ResumePoint>& start,
                 VelocityFn velocity)
    : Stepper(StepperInput{model_velocity(model, std::move(velocity)), encode(model, tokens),
                           model_sample_shape(model),
                           tokens.options().dtype(model->patch_embed->weight.scalar_type())},
              std::move(seeds), options, start) {}

Stepper::Stepper(StepperInput input, std::vector<uint64_t> seeds, const SamplerOptions& options,
                 const std::optional<ResumePoint>& start)
    : velocity_(std::move(input.velocity)),
      seeds_(std::move(seeds)),
      options_(options),
      tensor_options_(input.tensor_options),
      sample_shape_(std::move(input.sample_shape)),
      text_(std::move(input.condition.text)),
      pooled_(std::move(input.condition.pooled)) {
  torch::NoGradGuard no_grad;
  if (!velocity_) throw std::invalid_argument("sampler: no velocity function");
  if (options_.steps < 1) throw std::invalid_argument("sampler: steps must be >= 1");
  if (sample_shape_.size() != 3)
    throw std::invalid_argument("sampler: sample shape is not C, H, W");
  grid_ = time_grid(options_.steps, options_.shift);
  if (start) {
    if (start->step < 0 || start->step > options_.steps) {
      throw std::invalid_argument("sampler: resume step " + std::to_string(start->step) +
                                  " is not in [0, " + std::to_string(options_.steps) + "]");
    }
    const std::vector<int64_t> want{static_cast<int64_t>(seeds_.size()), sample_shape_[0],
                                    sample_shape_[1], sample_shape_[2]};
    if (!start->latent.defined() || start->latent.sizes().vec() != want) {
      throw std::invalid_argument("sampler: resume latent does not have the batch's shape");
    }
    x_ = start->latent.to(tensor_options_);
    step_ = start->step;
  } else {
    x_ = initial_latents(sample_shape_, seeds_, tensor_options_);
  }
}

at::Tensor Stepper::advance() {
  if (done()) throw std::logic_error("sampler: advance() past the last step");
  torch::NoGradGuard no_grad;
  const int k = step_;
  const double t = grid_[k], t_next = grid_[k + 1];
  const auto batch = static_cast<int64_t>(seeds_.size());
  const auto t_batch = torch::full({batch}, t, tensor_options_);
  auto v = velocity_(x_, t_batch, text_, pooled_);
  at::Tensor log_prob;
  if (options_.sde && options_.noise_level > 0.0) {
    const auto c = sde_coefficients(t, t_next, options_.noise_level, grid_[1]);
    auto mean = sde_mean(x_, v, c);
    auto eps = kernels::seeded_normal(seeds_, static_cast<uint64_t>(k) + 1, sample_shape_,
                                      tensor_options_);
    auto next = mean + eps * c.step_std;
    log_prob = sde_log_prob(next, mean, c);
    x_ = next;
  } else {
    x_ = ode_step(x_, v, t, t_next);
  }
  ++step_;
  return log_prob;
}

}  // namespace spotlight::sampler
