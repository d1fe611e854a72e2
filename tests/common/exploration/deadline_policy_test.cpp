// The finish-time model and the deadline policy: the probability of finishing in time falls with
// more work, slower or noisier samples and preemptions, and rises with explorers; the policy takes
// the widest arm at or above the probability and nothing when none is; the pool size it would
// need is the least one that suffices.

#include "common/exploration/deadline_policy.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "common/exploration/finish_time.hpp"

namespace spotlight::exploration {
namespace {

using namespace std::chrono_literals;

FinishTimeModel measured(double mean, double sd, int n = 200, std::uint64_t seed = 3) {
  FinishTimeModel model;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> draw(mean, sd);
  for (int i = 0; i < n; ++i)
    model.observe_sample_step(std::max(draw(rng), mean / 10));
  return model;
}

TEST(FinishTimeModelTest, WithoutMeasurementsThereIsNoPrediction) {
  FinishTimeModel model;
  EXPECT_FALSE(model.has_timing());
  EXPECT_FALSE(model.predict({.samples = 10, .steps = 4}, 2, 10.0));
  EXPECT_FALSE(model.explorers_needed({.samples = 10, .steps = 4}, 10.0, 0.9));
  model.observe_sample_step(-1);
  model.observe_sample_step(std::nan(""));
  EXPECT_FALSE(model.has_timing()) << "invalid measurements are ignored";
}

TEST(FinishTimeModelTest, ProbabilityFollowsWorkExplorersAndSpread) {
  const FinishTimeModel model = measured(0.01, 0.002);
  // 64 samples x 8 steps x 0.01 s = 5.12 s of work.
  const ExplorationWork work{.samples = 64, .steps = 8};
  const auto one = model.predict(work, 1, 6.0);
  ASSERT_TRUE(one);
  EXPECT_NEAR(one->mean_seconds, 5.12, 0.2);
  EXPECT_GT(one->probability, 0.9);
  EXPECT_LT(model.predict(work, 1, 5.0)->probability, 0.5);
  EXPECT_GT(model.predict(work, 2, 3.0)->probability, 0.9) << "two explorers halve the time";
  EXPECT_LT(model.predict({.samples = 64, .steps = 8, .backlog = 64}, 2, 3.0)->probability, 0.01)
      << "a backlog ahead of the work delays it";
  // The same mean with more spread: less likely to make a budget just above the mean.
  const FinishTimeModel noisy = measured(0.01, 0.008);
  EXPECT_LT(noisy.predict(work, 1, 5.4)->probability, model.predict(work, 1, 5.4)->probability);
}

TEST(FinishTimeModelTest, PreemptionsSlowThePoolDown) {
  FinishTimeModel model = measured(0.01, 0.001);
  const ExplorationWork work{.samples = 64, .steps = 8};
  const double calm = model.predict(work, 2, 3.0)->probability;
  // One departure per 10 explorer-seconds.
  model.observe_departures(6, 60, 100);
  EXPECT_NEAR(model.preemption_rate(), 0.1, 1e-9);
  EXPECT_LT(model.predict(work, 2, 3.0)->probability, calm);
  // Evidence decays: a long calm stretch brings the rate down.
  model.observe_departures(0, 60, 100 + 6000);
  EXPECT_LT(model.preemption_rate(), 0.01);
}

TEST(FinishTimeModelTest, ExplorersNeededIsTheLeastPoolThatSuffices) {
  const FinishTimeModel model = measured(0.01, 0.002);
  const ExplorationWork work{.samples = 256, .steps = 8};  // 20.48 s of work
  const auto k = model.explorers_needed(work, 3.0, 0.9);
  ASSERT_TRUE(k);
  EXPECT_GE(model.predict(work, *k, 3.0)->probability, 0.9);
  EXPECT_LT(model.predict(work, *k - 1, 3.0)->probability, 0.9);
  EXPECT_GE(*k, 7);  // 20.48 / 3 s
  EXPECT_FALSE(model.explorers_needed(work, 0.05, 0.9)) << "no pool finishes one sample in time";
}

IterationContext context(int explorers, std::chrono::milliseconds training,
                         const FinishTimeModel* model) {
  IterationContext c;
  c.iteration = 5;
  c.trainer_iteration = 4;
  c.prompts = 8;
  c.time_budget = training;
  c.training_time = training;
  c.live_explorers = explorers;
  c.finish_model = model;
  return c;
}

TEST(DeadlinePolicyTest, TakesTheWidestArmThatFinishesInTime) {
  DeadlineOptions o;
  o.candidates = {4, 8, 16, 32};
  o.steps = {4, 8};
  o.group_size = 4;
  DeadlineExplorationPolicy policy(o);
  ASSERT_EQ(policy.arms().front(), (ExplorationDecision{32, 8}));
  EXPECT_EQ(policy.widest(), (ExplorationDecision{32, 8}));

  const FinishTimeModel model = measured(0.01, 0.001);
  // 8 prompts x N x S x 0.01 s on 2 explorers within 3 s: N*S <= 75 at best, so 16 x 4 (64).
  const ExplorationDecision d = policy.decide(context(2, 3000ms, &model));
  EXPECT_EQ(d, (ExplorationDecision{16, 4}));
  ASSERT_TRUE(policy.last_choice());
  EXPECT_EQ(policy.last_choice()->reason, "largest in time");
  EXPECT_GE(*policy.last_choice()->probability, 0.9);
  // Twice the explorers: twice the work (of two arms of equal work, the one of more candidates).
  EXPECT_EQ(policy.decide(context(4, 3000ms, &model)), (ExplorationDecision{32, 4}));
  // Every arm too slow: explore nothing rather than hold the trainer up.
  EXPECT_EQ(policy.decide(context(1, 100ms, &model)), (ExplorationDecision{0, 0}));
  EXPECT_EQ(policy.last_choice()->reason, "no arm finishes in time");
}

TEST(DeadlinePolicyTest, ProbesWithoutTimingAndStopsWithoutExplorers) {
  DeadlineOptions o;
  o.candidates = {2, 8, 16};
  o.steps = {4, 10};
  o.group_size = 4;
  DeadlineExplorationPolicy policy(o);
  EXPECT_EQ(policy.decide(context(3, 3000ms, nullptr)), (ExplorationDecision{8, 4}))
      << "the cheapest arm with N >= G";
  const FinishTimeModel model = measured(0.01, 0.001);
  EXPECT_EQ(policy.decide(context(0, 3000ms, &model)), (ExplorationDecision{0, 0}));
  EXPECT_EQ(policy.last_choice()->reason, "no explorers");
}

TEST(DeadlinePolicyTest, BadOptionsNameTheField) {
  DeadlineOptions o;
  o.probability = 1.0;
  EXPECT_THROW(DeadlineExplorationPolicy{o}, std::invalid_argument);
  o = {};
  o.candidates = {2};
  o.group_size = 4;
  EXPECT_THROW(DeadlineExplorationPolicy{o}, std::invalid_argument);
}

}  // namespace
}  // namespace spotlight::exploration
