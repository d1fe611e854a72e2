// bf16 autocast of the DiT forward (model::AutocastGuard, MMDiT::set_autocast) against fp32, on
// the CPU: what it does to the per-step log-probabilities the GRPO loss uses.
#include "common/model/autocast.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/sampler/flow_step.hpp"
#include "common/sampler/sampler.hpp"
#include "tests/common/sampler/sampler_fixtures.hpp"

namespace spotlight::sampler {
namespace {

using test::perturbed_model;
using test::tokens;

// The trainer's recomputation of a rollout's log-probabilities (grpo_trainer.cpp): the SDE mean
// from a fresh forward at every step, then the Gaussian log-density of the step actually taken.
at::Tensor recomputed_log_probs(model::MMDiT& model, const Trajectory& rollout,
                                const at::Tensor& token_batch, const SamplerOptions& options) {
  torch::NoGradGuard no_grad;
  const auto grid = time_grid(options.steps, options.shift);
  std::vector<at::Tensor> out;
  const int64_t b = rollout.latents.size(0);
  for (int j = 0; j < options.steps; ++j) {
    const auto x = rollout.latents.select(1, j);
    const auto c = sde_coefficients(grid[j], grid[j + 1], options.noise_level, grid[1]);
    const auto v = model->forward(x, torch::full({b}, grid[j]), token_batch);
    EXPECT_EQ(v.scalar_type(), at::kFloat) << "the velocity leaves the model in fp32";
    out.push_back(sde_log_prob(rollout.latents.select(1, j + 1), sde_mean(x, v, c), c));
  }
  return torch::stack(out, 1);
}

TEST(Autocast, ParsesItsNames) {
  EXPECT_FALSE(model::parse_autocast("none").has_value());
  EXPECT_EQ(model::parse_autocast("bfloat16"), at::kBFloat16);
  EXPECT_THROW(model::parse_autocast("fp16"), std::invalid_argument);
}

TEST(Autocast, GuardRestoresTheThreadsStateAndNests) {
  auto x = torch::randn({4, 8}), w = torch::randn({8, 8});
  {
    const model::AutocastGuard outer(c10::DeviceType::CPU, at::kBFloat16);
    EXPECT_EQ(torch::matmul(x, w).scalar_type(), at::kBFloat16);
    {
      const model::AutocastGuard none(c10::DeviceType::CPU, std::nullopt);
      EXPECT_EQ(torch::matmul(x, w).scalar_type(), at::kBFloat16) << "nullopt changes nothing";
    }
    EXPECT_EQ(torch::matmul(x, w).scalar_type(), at::kBFloat16);
  }
  EXPECT_EQ(torch::matmul(x, w).scalar_type(), at::kFloat);
}

// Rollouts sampled in fp32; their log-probabilities recomputed in fp32 and under bf16 autocast.
// Tolerance: 1e-3 per step, where the log-probability (a mean over the latent's 3072 elements) is
// of order 1 in magnitude. A run trains with one precision for rollouts and updates alike (the
// sampler and the loss share the policy's model), so this deviation never enters the PPO ratio;
// it bounds how far a bf16 run's log-densities sit from the fp32 formulas.
TEST(Autocast, Bf16ForwardKeepsLogProbabilitiesWithinTolerance) {
  auto model = perturbed_model(3);
  model->eval();
  SamplerOptions options;
  options.steps = 6;
  options.keep_trajectory = true;
  const auto token_batch = tokens(4);
  const std::vector<uint64_t> seeds{11, 12, 13, 14};
  const auto rollout = sample(model, token_batch, seeds, options);
  ASSERT_EQ(rollout.log_probs.scalar_type(), at::kFloat);

  const auto fp32 = recomputed_log_probs(model, rollout, token_batch, options);
  model->set_autocast(at::kBFloat16);
  const auto bf16 = recomputed_log_probs(model, rollout, token_batch, options);
  model->set_autocast(std::nullopt);
  ASSERT_EQ(bf16.scalar_type(), at::kFloat) << "log-probabilities stay fp32 under autocast";

  const double deviation = (bf16 - fp32).abs().max().item<double>();
  const double magnitude = fp32.abs().mean().item<double>();
  std::cout << "[ measured ] bf16 autocast: max |log p deviation| " << deviation
            << " (mean |log p| " << magnitude << ", " << fp32.numel() << " step log-probs)\n";
  EXPECT_GT(deviation, 0.0) << "autocast did not engage: nothing ran in bf16";
  EXPECT_LT(deviation, 1e-3);
  EXPECT_TRUE(torch::equal(fp32, rollout.log_probs))
      << "fp32 recomputation reproduces the rollout's log-probabilities (first PPO ratio 1)";
}

// Under autocast too, the trainer's recomputation reproduces what the sampler recorded: rollouts
// and updates in bf16 keep the first PPO ratio at exactly 1.
TEST(Autocast, Bf16RolloutAndRecomputationAgreeExactly) {
  auto model = perturbed_model(5);
  model->eval();
  model->set_autocast(at::kBFloat16);
  SamplerOptions options;
  options.steps = 4;
  options.keep_trajectory = true;
  const auto token_batch = tokens(3);
  const auto rollout = sample(model, token_batch, {21, 22, 23}, options);
  ASSERT_EQ(rollout.latents.scalar_type(), at::kFloat) << "the sampler's latents stay fp32";
  EXPECT_TRUE(
      torch::equal(recomputed_log_probs(model, rollout, token_batch, options), rollout.log_probs));
}

}  // namespace
}  // namespace spotlight::sampler
