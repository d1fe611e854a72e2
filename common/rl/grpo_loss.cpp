#include "common/rl/grpo_loss.hpp"

#include <torch/torch.h>

namespace spotlight::rl {

GrpoLossTerms grpo_loss(const at::Tensor& logp_new, const at::Tensor& logp_old,
                        const at::Tensor& advantages, const at::Tensor& mean_new,
                        const at::Tensor& mean_ref, double std_dev,
                        const GrpoLossOptions& options) {
  GrpoLossTerms out;
  auto mask = (advantages != 0).to(logp_new.scalar_type());
  out.active = mask.sum().item<int64_t>();
  const auto count = std::max<int64_t>(out.active, 1);
  auto ratio = torch::exp(logp_new - logp_old);
  auto unclipped = -advantages * ratio;
  auto clipped =
      -advantages * torch::clamp(ratio, 1.0 - options.clip_range, 1.0 + options.clip_range);
  auto per_sample = torch::maximum(unclipped, clipped);
  out.policy_loss = (per_sample * mask).sum() / count;
  out.loss = out.policy_loss;
  if (options.kl_beta > 0.0 && mean_ref.defined()) {
    auto kl = ((mean_new - mean_ref).pow(2).flatten(1).mean(1) / (2.0 * std_dev * std_dev));
    out.kl = (kl * mask).sum() / count;
    out.loss = out.loss + options.kl_beta * out.kl;
  } else {
    out.kl = torch::zeros({}, logp_new.options());
  }
  out.ratio = ratio.detach();
  out.clipped = (clipped > unclipped).detach();
  return out;
}

}  // namespace spotlight::rl
