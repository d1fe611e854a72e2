#include "common/sampler/sampler.hpp"

#include <torch/torch.h>

#include "common/sampler/flow_step.hpp"
#include "common/sampler/stepper.hpp"
#include "kernels/philox/noise.hpp"

namespace spotlight::sampler {

at::Tensor Trajectory::final() const {
  return latents.select(1, latents.size(1) - 1);
}

at::Tensor initial_latents(const model::MMDiTOptions& m, const std::vector<uint64_t>& seeds,
                           const at::TensorOptions& options) {
  return initial_latents(std::vector<int64_t>{m.channels(), m.image_size(), m.image_size()}, seeds,
                         options);
}

at::Tensor initial_latents(const std::vector<int64_t>& sample_shape,
                           const std::vector<uint64_t>& seeds, const at::TensorOptions& options) {
  return kernels::seeded_normal(seeds, 0, sample_shape, options);
}

Trajectory sample(model::MMDiT& model, const at::Tensor& tokens, const std::vector<uint64_t>& seeds,
                  const SamplerOptions& options, const std::optional<ResumePoint>& resume) {
  return sample(model, VelocityFn{}, tokens, seeds, options, resume);
}

Trajectory sample(model::MMDiT& model, const VelocityFn& velocity, const at::Tensor& tokens,
                  const std::vector<uint64_t>& seeds, const SamplerOptions& options,
                  const std::optional<ResumePoint>& resume) {
  torch::NoGradGuard no_grad;
  Stepper stepper(model, tokens, seeds, options, resume, velocity);
  return run_to_end(stepper, options.keep_trajectory);
}

Trajectory run_to_end(Stepper& stepper, bool keep_trajectory) {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> latents;
  std::vector<at::Tensor> log_probs;
  if (keep_trajectory) latents.push_back(stepper.latent());
  while (!stepper.done()) {
    auto log_prob = stepper.advance();
    if (log_prob.defined()) log_probs.push_back(std::move(log_prob));
    if (keep_trajectory) latents.push_back(stepper.latent());
  }
  Trajectory out;
  out.latents = keep_trajectory ? torch::stack(latents, 1) : stepper.latent().unsqueeze(1);
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
