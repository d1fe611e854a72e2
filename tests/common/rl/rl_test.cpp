#include <algorithm>
#include <random>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/rl/advantages.hpp"
#include "common/rl/grpo_loss.hpp"
#include "common/rl/kendall.hpp"
#include "common/rl/selection.hpp"

namespace spotlight::rl {
namespace {

double brute_force_max_variance(const std::vector<double>& r, size_t g) {
  double best = -1;
  const size_t n = r.size();
  for (uint32_t mask = 0; mask < (1u << n); ++mask) {
    if (static_cast<size_t>(__builtin_popcount(mask)) != g) continue;
    std::vector<double> chosen;
    for (size_t i = 0; i < n; ++i) {
      if (mask & (1u << i)) chosen.push_back(r[i]);
    }
    best = std::max(best, variance(chosen));
  }
  return best;
}

TEST(Selection, EqualsBruteForceForSmallN) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t n = 1 + rng() % 12;
    const size_t g = 1 + rng() % n;
    std::vector<double> r(n);
    // Discrete rewards (ties, as the task's partial credit gives) and continuous ones.
    for (auto& x : r)
      x = trial % 2 ? std::uniform_real_distribution<double>(0, 1)(rng) : (rng() % 5) / 4.0;
    const auto chosen = select_max_variance(r, g);
    ASSERT_EQ(chosen.size(), g);
    std::vector<size_t> sorted = chosen;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "duplicate index";
    std::vector<double> values;
    for (size_t i : chosen)
      values.push_back(r[i]);
    EXPECT_NEAR(variance(values), brute_force_max_variance(r, g), 1e-12) << "n=" << n << " g=" << g;
  }
}

TEST(Selection, RejectsMoreThanExplored) {
  EXPECT_THROW(select_max_variance({1, 2}, 3), std::invalid_argument);
}

TEST(Advantages, CentredScaledClippedAndZeroForFlatGroups) {
  AdvantageOptions o;
  o.group_size = 4;
  const std::vector<double> r{0, 1, 0, 1, 0.5, 0.5, 0.5, 0.5};
  const auto a = group_advantages(r, o);
  EXPECT_NEAR(a[0], -0.5 / (0.5 + 1e-4), 1e-12);
  EXPECT_NEAR(a[1], 0.5 / (0.5 + 1e-4), 1e-12);
  for (int i = 4; i < 8; ++i)
    EXPECT_EQ(a[i], 0.0);
  EXPECT_DOUBLE_EQ(zero_std_group_ratio(r, 4), 0.5);
  o.clip = 0.5;
  for (double x : group_advantages(r, o))
    EXPECT_LE(std::abs(x), 0.5);
  o.group_size = 3;
  EXPECT_THROW(group_advantages(r, o), std::invalid_argument);
}

// Equal rewards whose mean rounds off (8 x 0.1 averages to 0.09999999999999999) still give exact
// zeros, per group std or global, so the loss drops those samples.
TEST(Advantages, FlatGroupsAreExactlyZeroEvenWhenTheirMeanRoundsOff) {
  AdvantageOptions o;
  o.group_size = 8;
  std::vector<double> r(8, 0.1);
  for (int i = 0; i < 8; ++i)
    r.push_back(i % 2);
  for (bool global : {false, true}) {
    o.global_std = global;
    const auto a = group_advantages(r, o);
    for (int i = 0; i < 8; ++i)
      EXPECT_EQ(a[i], 0.0) << "sample " << i << (global ? " (global std)" : "");
    EXPECT_NE(a[8], 0.0);
  }
}

TEST(Advantages, GlobalStdUsesTheWholeBatch) {
  AdvantageOptions o;
  o.group_size = 2;
  o.global_std = true;
  const std::vector<double> r{0, 2, 10, 10};
  const auto a = group_advantages(r, o);
  const double global_std = std::sqrt(variance(r));
  EXPECT_NEAR(a[1], 1.0 / (global_std + 1e-4), 1e-12);  // centred by its group mean 1
  EXPECT_EQ(a[2], 0.0);
}

TEST(Kendall, KnownValues) {
  EXPECT_NEAR(*kendall_tau_b({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0, 1e-12);
  EXPECT_NEAR(*kendall_tau_b({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0, 1e-12);
  // one discordant pair of six: (6-1-1... ) tau = (5-1)/6
  EXPECT_NEAR(*kendall_tau_b({1, 2, 3, 4}, {1, 3, 2, 4}), 4.0 / 6.0, 1e-12);
  // ties: tau-b of x=(1,1,2), y=(1,2,3): C=2, D=0, ties_x=1 -> 2/sqrt(2*3)
  EXPECT_NEAR(*kendall_tau_b({1, 1, 2}, {1, 2, 3}), 2.0 / std::sqrt(6.0), 1e-12);
  EXPECT_FALSE(kendall_tau_b({1, 1, 1}, {1, 2, 3}).has_value());
  EXPECT_FALSE(kendall_tau_b({1}, {1}).has_value());
}

TEST(GrpoLoss, RatioOneGivesMinusMeanAdvantageOverActiveSamples) {
  auto logp = torch::tensor({-1.0, -2.0, -3.0});
  auto adv = torch::tensor({1.0, 0.0, -0.5});
  auto terms = grpo_loss(logp, logp, adv, {}, {}, 1.0, GrpoLossOptions{});
  EXPECT_EQ(terms.active, 2);
  EXPECT_NEAR(terms.loss.item<double>(), -(1.0 - 0.5) / 2, 1e-7);
  EXPECT_TRUE(torch::equal(terms.ratio, torch::ones({3})));
}

TEST(GrpoLoss, ClipsTheRatioOnTheAdvantagesSide) {
  GrpoLossOptions o;
  o.clip_range = 0.1;
  auto old = torch::zeros({2});
  auto next = torch::tensor({std::log(1.5), std::log(1.5)});
  auto adv = torch::tensor({1.0, -1.0});
  auto terms = grpo_loss(next, old, adv, {}, {}, 1.0, o);
  // A>0: min(1.5, 1.1) -> -1.1 ; A<0: max(1.5, 1.1)*-(-1) -> 1.5
  EXPECT_NEAR(terms.loss.item<double>(), (-1.1 + 1.5) / 2, 1e-6);
  EXPECT_TRUE(terms.clipped[0].item<bool>());
  EXPECT_FALSE(terms.clipped[1].item<bool>());
}

TEST(GrpoLoss, KlTermIsMeanSquaredMeanGapOverTwoSSquared) {
  GrpoLossOptions o;
  o.kl_beta = 0.5;
  auto logp = torch::zeros({1});
  auto mean_new = torch::full({1, 2, 2}, 0.3);
  auto mean_ref = torch::zeros({1, 2, 2});
  auto terms = grpo_loss(logp, logp, torch::ones({1}), mean_new, mean_ref, 0.2, o);
  EXPECT_NEAR(terms.kl.item<double>(), 0.09 / (2 * 0.04), 1e-6);
  EXPECT_NEAR(terms.loss.item<double>(), -1.0 + 0.5 * 0.09 / 0.08, 1e-6);
}

}  // namespace
}  // namespace spotlight::rl
