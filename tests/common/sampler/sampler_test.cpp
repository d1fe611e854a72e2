#include "common/sampler/sampler.hpp"

#include <cmath>
#include <numbers>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/sampler/flow_step.hpp"
#include "tests/common/sampler/sampler_fixtures.hpp"

namespace spotlight::sampler {
namespace {

using test::perturbed_model;
using test::tokens;

TEST(TimeGrid, RunsFromOneToZeroMonotonically) {
  for (double shift : {1.0, 3.0}) {
    const auto g = time_grid(10, shift);
    ASSERT_EQ(g.size(), 11u);
    EXPECT_EQ(g.front(), 1.0);
    EXPECT_EQ(g.back(), 0.0);
    for (size_t i = 1; i < g.size(); ++i)
      EXPECT_LT(g[i], g[i - 1]);
  }
  EXPECT_THROW(time_grid(0), std::invalid_argument);
}

TEST(FlowStep, SdeWithZeroNoiseIsTheOdeStepExactly) {
  auto x = torch::randn({2, 3, 8, 8});
  auto v = torch::randn({2, 3, 8, 8});
  const auto grid = time_grid(10);
  for (size_t k = 0; k + 1 < grid.size(); ++k) {
    const auto c = sde_coefficients(grid[k], grid[k + 1], 0.0, grid[1]);
    EXPECT_EQ(c.step_std, 0.0);
    auto sde = sde_mean(x, v, c) + torch::randn_like(x) * c.step_std;
    EXPECT_TRUE(torch::equal(sde, ode_step(x, v, grid[k], grid[k + 1]))) << "step " << k;
  }
}

TEST(FlowStep, CoefficientsFollowTheDesignFormulas) {
  const double t = 0.6, t_next = 0.5, a = 0.7, dt = t_next - t;
  const auto c = sde_coefficients(t, t_next, a, 0.9);
  const double s = a * std::sqrt(t / (1 - t));
  EXPECT_DOUBLE_EQ(c.std_dev, s);
  EXPECT_DOUBLE_EQ(c.x_scale, 1 + s * s * dt / (2 * t));
  EXPECT_DOUBLE_EQ(c.v_scale, (1 + s * s * (1 - t) / (2 * t)) * dt);
  EXPECT_DOUBLE_EQ(c.step_std, s * std::sqrt(-dt));
  // t = 1 uses the next grid point in the denominator
  EXPECT_DOUBLE_EQ(sde_coefficients(1.0, 0.9, a, 0.9).std_dev, a * std::sqrt(1.0 / (1 - 0.9)));
}

TEST(FlowStep, LogProbMatchesAnIndependentComputation) {
  auto x_next = torch::randn({3, 2, 4, 4}, torch::kDouble);
  auto mean = torch::randn({3, 2, 4, 4}, torch::kDouble);
  const auto c = sde_coefficients(0.7, 0.6, 0.7, 0.9);
  const auto lp = sde_log_prob(x_next, mean, c);
  ASSERT_EQ(lp.sizes(), (std::vector<int64_t>{3}));
  for (int b = 0; b < 3; ++b) {
    double sum = 0;
    auto xa = x_next[b].flatten(), ma = mean[b].flatten();
    for (int64_t i = 0; i < xa.numel(); ++i) {
      const double d = xa[i].item<double>() - ma[i].item<double>();
      const double sd = c.step_std;
      // log N(d; 0, sd^2)
      sum += -0.5 * (d / sd) * (d / sd) - std::log(sd) - 0.5 * std::log(2 * std::numbers::pi);
    }
    EXPECT_NEAR(lp[b].item<double>(), sum / xa.numel(), 1e-10);
  }
}

TEST(Sampler, SameSeedAndWeightsGiveBitIdenticalImages) {
  auto m1 = perturbed_model(5);
  auto m2 = perturbed_model(5);
  SamplerOptions o;
  o.steps = 6;
  o.keep_trajectory = true;
  const std::vector<uint64_t> seeds{11, 12, 13};
  auto a = sample(m1, tokens(3), seeds, o);
  auto b = sample(m2, tokens(3), seeds, o);
  EXPECT_TRUE(torch::equal(a.latents, b.latents));
  EXPECT_TRUE(torch::equal(a.log_probs, b.log_probs));
  auto c = sample(m1, tokens(3), {11, 12, 14}, o);
  EXPECT_TRUE(torch::equal(a.latents[0], c.latents[0]));
  EXPECT_FALSE(torch::equal(a.latents[2], c.latents[2]));
}

TEST(Sampler, OdeSamplingIsDeterministicAndSeedDependent) {
  auto m = perturbed_model(6);
  SamplerOptions o;
  o.sde = false;
  o.steps = 5;
  auto a = sample(m, tokens(2), {1, 2}, o).final();
  auto b = sample(m, tokens(2), {1, 2}, o).final();
  EXPECT_TRUE(torch::equal(a, b));
  EXPECT_FALSE(torch::allclose(a[0], a[1]));
}

TEST(Sampler, ResumingACommittedStepEqualsTheUninterruptedRun) {
  auto m = perturbed_model(7);
  SamplerOptions o;
  o.steps = 6;
  o.keep_trajectory = true;
  const std::vector<uint64_t> seeds{21, 22};
  auto whole = sample(m, tokens(2), seeds, o);
  ResumePoint at3{whole.latents.select(1, 3), 3};
  o.keep_trajectory = false;
  auto resumed = sample(m, tokens(2), seeds, o, at3);
  EXPECT_TRUE(torch::equal(resumed.final(), whole.final()));
}

TEST(Sampler, ALogProbIsTheDensityOfTheDrawnStep) {
  auto m = perturbed_model(8);
  SamplerOptions o;
  o.steps = 4;
  o.keep_trajectory = true;
  auto tr = sample(m, tokens(2), {3, 4}, o);
  ASSERT_EQ(tr.log_probs.sizes(), (std::vector<int64_t>{2, 4}));
  EXPECT_TRUE(torch::isfinite(tr.log_probs).all().item<bool>());
  // eps ~ N(0,1) so the mean log-density is about -0.5 - log(step_std) - 0.5 log(2 pi)
  const auto grid = time_grid(4);
  const auto c = sde_coefficients(grid[1], grid[2], 0.7, grid[1]);
  const double expected = -0.5 - std::log(c.step_std) - 0.5 * std::log(2 * std::numbers::pi);
  EXPECT_NEAR(tr.log_probs[0][1].item<double>(), expected, 0.15);
}

}  // namespace
}  // namespace spotlight::sampler
