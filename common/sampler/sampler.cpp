#include "common/sampler/sampler.hpp"

#include <torch/torch.h>

#include "common/sampler/flow_step.hpp"
#include "kernels/philox/noise.hpp"

namespace spotlight::sampler {

at::Tensor Trajectory::final() const {
  return latents.select(1, latents.size(1) - 1);
}

at::Tensor initial_latents(const model::MMDiTOptions& m, const std::vector<uint64_t>& seeds,
                           const at::TensorOptions& options) {
  return kernels::seeded_normal(seeds, 0, {m.channels(), m.image_size(), m.image_size()}, options);
}

Trajectory sample(model::MMDiT& model, const at::Tensor& tokens, const std::vector<uint64_t>& seeds,
                  const SamplerOptions& options, const std::optional<ResumePoint>& resume) {
  VelocityFn velocity = [&model](const at::Tensor& x, const at::Tensor& t, const at::Tensor& text,
                                 const at::Tensor& pooled) {
    return model->forward_encoded(x, t, text, pooled);
  };
  return sample(model, velocity, tokens, seeds, options, resume);
}

Trajectory sample(model::MMDiT& model, const VelocityFn& velocity, const at::Tensor& tokens,
                  const std::vector<uint64_t>& seeds, const SamplerOptions& options,
                  const std::optional<ResumePoint>& resume) {
  torch::NoGradGuard no_grad;
  const auto& m = model->options();
  const auto tensor_options = tokens.options().dtype(model->patch_embed->weight.scalar_type());
  const auto grid = time_grid(options.steps, options.shift);
  const int start = resume ? resume->step : 0;
  at::Tensor x =
      resume ? resume->latent.to(tensor_options) : initial_latents(m, seeds, tensor_options);
  const auto batch = static_cast<int64_t>(seeds.size());
  const std::vector<int64_t> sample_shape{m.channels(), m.image_size(), m.image_size()};

  std::vector<at::Tensor> latents;
  std::vector<at::Tensor> log_probs;
  if (options.keep_trajectory) latents.push_back(x);
  auto [text, pooled] = model->encode_text(tokens);
  for (int k = start; k < options.steps; ++k) {
    const double t = grid[k], t_next = grid[k + 1];
    auto v = velocity(x, torch::full({batch}, t, tensor_options), text, pooled);
    if (options.sde && options.noise_level > 0.0) {
      const auto c = sde_coefficients(t, t_next, options.noise_level, grid[1]);
      auto mean = sde_mean(x, v, c);
      auto eps =
          kernels::seeded_normal(seeds, static_cast<uint64_t>(k) + 1, sample_shape, tensor_options);
      auto next = mean + eps * c.step_std;
      log_probs.push_back(sde_log_prob(next, mean, c));
      x = next;
    } else {
      x = ode_step(x, v, t, t_next);
    }
    if (options.keep_trajectory) latents.push_back(x);
  }
  Trajectory out;
  out.latents = options.keep_trajectory ? torch::stack(latents, 1) : x.unsqueeze(1);
  if (!log_probs.empty()) out.log_probs = torch::stack(log_probs, 1);
  return out;
}

std::vector<std::vector<float>> to_images(const at::Tensor& latents) {
  auto hwc = ((latents.detach().to(torch::kCPU, torch::kFloat) + 1.0) * 0.5)
                 .clamp(0.0, 1.0)
                 .permute({0, 2, 3, 1})
                 .contiguous();
  std::vector<std::vector<float>> images(hwc.size(0));
  const int64_t per = hwc.numel() / std::max<int64_t>(1, hwc.size(0));
  const float* data = hwc.data_ptr<float>();
  for (int64_t b = 0; b < hwc.size(0); ++b)
    images[b].assign(data + b * per, data + (b + 1) * per);
  return images;
}

}  // namespace spotlight::sampler
