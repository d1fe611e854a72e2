#pragma once
// The clipped GRPO objective of docs/algorithm.md, for one trained SDE step of a batch:
//   loss = mean_b max(-A_b * ratio_b, -A_b * clip(ratio_b, 1-eps, 1+eps)) + beta * KL
//   ratio = exp(logp_new - logp_old),  KL = mean((mu_new - mu_ref)^2 / (2 s^2))
// The mean runs over the samples whose advantage is non-zero (zero-advantage samples are dropped).

#include <ATen/core/Tensor.h>

namespace spotlight::rl {

struct GrpoLossOptions {
  double clip_range = 1e-4;  // eps
  double kl_beta = 0.0;      // beta; 0 disables the KL term (and needs no reference model)
};

struct GrpoLossTerms {
  at::Tensor loss;         // scalar, differentiable
  at::Tensor policy_loss;  // scalar
  at::Tensor kl;           // scalar (0 when beta == 0)
  at::Tensor ratio;        // [B], detached
  at::Tensor clipped;      // [B] bool: the clipped branch was active
  int64_t active = 0;      // samples with non-zero advantage
};

// logp_new, logp_old, advantages: [B]. mean_new / mean_ref: [B, ...] SDE means under the policy
// and the frozen reference (mean_ref undefined when beta == 0). std_dev: the step's s.
GrpoLossTerms grpo_loss(const at::Tensor& logp_new, const at::Tensor& logp_old,
                        const at::Tensor& advantages, const at::Tensor& mean_new,
                        const at::Tensor& mean_ref, double std_dev, const GrpoLossOptions& options);

}  // namespace spotlight::rl
