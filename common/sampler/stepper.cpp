#include "common/sampler/stepper.hpp"

#include <stdexcept>
#include <string>

#include <torch/torch.h>

#include "common/sampler/flow_step.hpp"
#include "kernels/philox/noise.hpp"

namespace spotlight::sampler {

Stepper::Stepper(model::MMDiT& model, const at::Tensor& tokens, std::vector<uint64_t> seeds,
                 const SamplerOptions& options, const std::optional<ResumePoint>& start)
    : model_(model), seeds_(std::move(seeds)), options_(options) {
  torch::NoGradGuard no_grad;
  if (options_.steps < 1) throw std::invalid_argument("sampler: steps must be >= 1");
  const auto& m = model_->options();
  tensor_options_ = tokens.options().dtype(model_->patch_embed->weight.scalar_type());
  grid_ = time_grid(options_.steps, options_.shift);
  sample_shape_ = {m.channels(), m.image_size(), m.image_size()};
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
    x_ = initial_latents(m, seeds_, tensor_options_);
  }
  std::tie(text_, pooled_) = model_->encode_text(tokens);
}

at::Tensor Stepper::advance() {
  if (done()) throw std::logic_error("sampler: advance() past the last step");
  torch::NoGradGuard no_grad;
  const int k = step_;
  const double t = grid_[k], t_next = grid_[k + 1];
  const auto batch = static_cast<int64_t>(seeds_.size());
  auto v = model_->forward_encoded(x_, torch::full({batch}, t, tensor_options_), text_, pooled_);
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
