// The bandit exploration policy on a simulated environment: arms whose rewards are noisy draws
// around a known mean, explorers whose per-sample-step time is known, a trainer whose training
// time is the budget. Properties: it settles on the best feasible arm; it never schedules an arm
// whose predicted time exceeds the budget; it adapts when explorers leave and join.

#include "common/exploration/bandit_policy.hpp"

#include <map>
#include <random>

#include <gtest/gtest.h>

namespace spotlight::exploration {
namespace {

using namespace std::chrono_literals;

// Mean reward of an arm: more candidates and more exploration steps give more contrast, with
// diminishing returns (what max-variance selection over a noisier or smaller pool looks like).
double true_mean(const ExplorationDecision& arm) {
  return 0.02 * std::log(static_cast<double>(arm.candidates)) +
         0.01 * std::log(static_cast<double>(arm.steps));
}

struct Environment {
  int prompts = 8;
  double seconds_per_sample_step = 0.01;
  int explorers = 4;
  std::chrono::milliseconds training_time{3000};
  double margin = 0.9;
  std::mt19937_64 rng{7};

  double predicted(const ExplorationDecision& arm) const {
    return prompts * arm.candidates * arm.steps * seconds_per_sample_step / explorers;
  }
  bool feasible(const ExplorationDecision& arm) const {
    return predicted(arm) <= margin * static_cast<double>(training_time.count()) / 1000.0;
  }
  IterationContext context(std::int64_t iteration) const {
    IterationContext c;
    c.iteration = iteration;
    c.trainer_iteration = iteration;
    c.prompts = prompts;
    c.time_budget = 60s;
    c.training_time = training_time;
    c.live_explorers = explorers;
    return c;
  }
  double reward(const ExplorationDecision& arm) {
    return std::max(0.0, std::normal_distribution<double>(true_mean(arm), 0.01)(rng));
  }
};

BanditOptions options() {
  BanditOptions o;
  o.candidates = {8, 16, 32, 64};
  o.steps = {2, 5, 10};
  o.group_size = 8;
  o.time_margin = 0.9;
  o.exploration = 0.3;
  o.discount = 1.0;
  return o;
}

ExplorationDecision best_feasible(const BanditExplorationPolicy& policy, const Environment& env) {
  ExplorationDecision best{0, 0};
  double best_mean = -1;
  for (const auto& arm : policy.arms()) {
    if (env.feasible(arm) && true_mean(arm) > best_mean) {
      best_mean = true_mean(arm);
      best = arm;
    }
  }
  return best;
}

// Runs `iterations` decisions; returns how often each arm was chosen in the last `tail`.
std::map<std::pair<int, int>, int> run(BanditExplorationPolicy& policy, Environment& env,
                                       std::int64_t first, int iterations, int tail) {
  std::map<std::pair<int, int>, int> chosen;
  for (int k = 0; k < iterations; ++k) {
    const ExplorationDecision d = policy.decide(env.context(first + k));
    const auto& why = *policy.last_choice();
    if (d.candidates == 0) continue;
    if (why.reason.rfind("probe", 0) != 0) {
      // Never schedules what it predicts cannot finish in time (with a known timing, the
      // prediction is the truth here, so the real time fits too).
      EXPECT_TRUE(env.feasible(d)) << "iteration " << first + k << " chose N=" << d.candidates
                                   << " S=" << d.steps << " (" << why.reason << ")";
    }
    policy.observe_timing(env.seconds_per_sample_step);
    policy.observe_reward(d, env.reward(d));
    if (k >= iterations - tail) ++chosen[{d.candidates, d.steps}];
  }
  return chosen;
}

std::pair<int, int> most_chosen(const std::map<std::pair<int, int>, int>& chosen) {
  std::pair<int, int> arm{0, 0};
  int most = -1;
  for (const auto& [a, n] : chosen) {
    if (n > most) {
      most = n;
      arm = a;
    }
  }
  return arm;
}

TEST(BanditExplorationPolicy, SettlesOnTheBestFeasibleArm) {
  Environment env;
  BanditExplorationPolicy policy(options());
  const ExplorationDecision best = best_feasible(policy, env);
  // The best arm overall (64 x 10) does not fit: the best feasible one is smaller.
  ASSERT_FALSE(env.feasible({64, 10}));
  ASSERT_GT(best.candidates, 0);
  const auto chosen = run(policy, env, 0, 300, 100);
  EXPECT_EQ(most_chosen(chosen), std::make_pair(best.candidates, best.steps));
  EXPECT_GE(chosen.at({best.candidates, best.steps}), 60) << "of the last 100 decisions";
}

TEST(BanditExplorationPolicy, NeverSchedulesPredictedInfeasibleWorkAndProbesFirst) {
  Environment env;
  BanditExplorationPolicy policy(options());
  // No timing yet: a probe with the cheapest arm.
  EXPECT_EQ(policy.decide(env.context(0)), (ExplorationDecision{8, 2}));
  EXPECT_EQ(policy.last_choice()->reason.rfind("probe", 0), 0u);
  // A timing so slow that nothing fits: explore nothing.
  policy.observe_timing(100.0);
  EXPECT_EQ(policy.decide(env.context(1)), (ExplorationDecision{0, 0}));
  EXPECT_EQ(policy.last_choice()->reason, "no arm feasible");
  for (const auto& arm : policy.last_choice()->arms) {
    EXPECT_FALSE(arm.feasible);
    ASSERT_TRUE(arm.predicted_seconds.has_value());
    EXPECT_GT(*arm.predicted_seconds, policy.last_choice()->budget_seconds);
  }
  // No explorer alive: nothing.
  BanditExplorationPolicy fresh(options());
  fresh.observe_timing(env.seconds_per_sample_step);
  auto context = env.context(2);
  context.live_explorers = 0;
  EXPECT_EQ(fresh.decide(context), (ExplorationDecision{0, 0}));
  context.live_explorers.reset();
  EXPECT_EQ(fresh.decide(context), (ExplorationDecision{0, 0}));
}

TEST(BanditExplorationPolicy, AdaptsWhenExplorersLeaveAndJoin) {
  Environment env;
  BanditOptions o = options();
  o.discount = 0.97;  // forgets, so a returning capacity is re-explored
  BanditExplorationPolicy policy(o);
  const ExplorationDecision best_at_4 = best_feasible(policy, env);
  auto chosen = run(policy, env, 0, 200, 60);
  EXPECT_EQ(most_chosen(chosen), std::make_pair(best_at_4.candidates, best_at_4.steps));

  env.explorers = 1;  // three explorers preempted
  const ExplorationDecision best_at_1 = best_feasible(policy, env);
  ASSERT_NE(best_at_1, best_at_4);
  ASSERT_FALSE(env.feasible(best_at_4));
  chosen = run(policy, env, 200, 200, 60);  // run() checks every choice is feasible at 1 explorer
  EXPECT_EQ(most_chosen(chosen), std::make_pair(best_at_1.candidates, best_at_1.steps));

  env.explorers = 16;  // capacity returns, larger
  const ExplorationDecision best_at_16 = best_feasible(policy, env);
  ASSERT_NE(best_at_16, best_at_4);
  chosen = run(policy, env, 400, 300, 60);
  EXPECT_EQ(most_chosen(chosen), std::make_pair(best_at_16.candidates, best_at_16.steps));
}

TEST(BanditExplorationPolicy, DoesNotRetryAnUntriedArmAwaitingItsOutcome) {
  // Lookahead: iteration k+1 is decided before k's outcome arrives.
  Environment env;
  BanditExplorationPolicy policy(options());
  policy.observe_timing(env.seconds_per_sample_step);
  const ExplorationDecision first = policy.decide(env.context(0));
  const ExplorationDecision second = policy.decide(env.context(1));
  EXPECT_NE(first, second);
  EXPECT_EQ(first, policy.arms()[0]);
  EXPECT_EQ(second, policy.arms()[1]);
  policy.observe_reward(first, 0.01);
  policy.observe_reward(second, 0.02);
  EXPECT_NE(policy.decide(env.context(2)), first);  // the next untried arm
}

TEST(BanditExplorationPolicy, ReportsEveryArmAndRejectsBadOptions) {
  Environment env;
  BanditExplorationPolicy policy(options());
  policy.observe_timing(env.seconds_per_sample_step);
  policy.decide(env.context(0));
  const auto& why = *policy.last_choice();
  EXPECT_EQ(why.arms.size(), policy.arms().size());
  EXPECT_EQ(why.arms.size(), 12u);
  EXPECT_EQ(why.reason, "untried feasible arm");
  EXPECT_DOUBLE_EQ(why.budget_seconds, 0.9 * 3.0);
  for (const auto& arm : why.arms)
    EXPECT_EQ(arm.feasible, env.feasible(arm.arm));

  BanditOptions bad = options();
  bad.candidates = {4};  // every N < G
  EXPECT_THROW(BanditExplorationPolicy{bad}, std::invalid_argument);
  bad = options();
  bad.steps = {1};
  EXPECT_THROW(BanditExplorationPolicy{bad}, std::invalid_argument);
  bad = options();
  bad.discount = 0;
  EXPECT_THROW(BanditExplorationPolicy{bad}, std::invalid_argument);
}

}  // namespace
}  // namespace spotlight::exploration
