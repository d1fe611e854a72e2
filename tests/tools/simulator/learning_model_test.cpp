// The learning model's properties and the first stage of its fit (tools/simulator).
#include "tools/simulator/learning_model.hpp"

#include <cmath>

#include <gtest/gtest.h>

#include "common/rl/selection.hpp"
#include "tools/simulator/calibration.hpp"
#include "tools/simulator/embedded_replay.hpp"

namespace spotlight::simulator {
namespace {

LearningParams params() {
  LearningParams p;
  p.z0 = 0.3;
  p.sigma_d = 1.2;
  p.reward_levels = 3;
  p.stale_flip = 0.2;
  p.steps_gamma = 1.5;
  p.eta = 0.05;
  p.noise = 0.5;
  return p;
}

TEST(LearningModel, DrawsAreFunctionsOfTheSeedAndAPromptKeepsItsDifficulty) {
  const LearningModel a(params(), 7), b(params(), 7), c(params(), 8);
  int differ = 0;
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(a.reward(3, i, 5), b.reward(3, i, 5));
    EXPECT_EQ(a.difficulty(3, i), a.difficulty(3, i));
    differ += a.reward(3, i, 5) != c.reward(3, i, 5) ? 1 : 0;
    const double r = a.reward(3, i, 5);
    EXPECT_DOUBLE_EQ(r * 3, std::round(r * 3));  // Binomial(3, p) / 3
  }
  EXPECT_GT(differ, 0);
  // A pool's prompt has the same difficulty whichever run or iteration draws it.
  LearningParams pooled = params();
  pooled.prompt_pool = 3;
  const LearningModel p1(pooled, 1), p2(pooled, 2);
  std::vector<double> seen;
  for (int k = 0; k < 30; ++k) {
    for (const auto* m : {&p1, &p2}) {
      const double d = m->difficulty(k, 0);
      bool known = false;
      for (double s : seen)
        known = known || s == d;
      if (!known) seen.push_back(d);
    }
  }
  EXPECT_EQ(seen.size(), 3u);
}

TEST(LearningModel, ExplorationObservesTheSeedExactlyOnlyWithFullStepsAndFreshWeights) {
  const LearningModel m(params(), 3);
  EXPECT_EQ(m.flip_probability(8, 8, 0), 0.0);
  EXPECT_NEAR(m.flip_probability(8, 8, 1), 0.2, 1e-12);
  EXPECT_NEAR(m.flip_probability(4, 8, 0), std::pow(0.5, 1.5), 1e-12);
  EXPECT_NEAR(m.flip_probability(0, 8, 0), 1.0, 1e-12);
  EXPECT_LT(m.flip_probability(6, 8, 0), m.flip_probability(2, 8, 0));
  int same_full = 0, same_partial = 0;
  for (int i = 0; i < 400; ++i) {
    same_full += m.observed_reward(0, i, 1, 8, 8, 0) == m.reward(0, i, 1) ? 1 : 0;
    same_partial += m.observed_reward(0, i, 1, 2, 8, 1) == m.reward(0, i, 1) ? 1 : 0;
  }
  EXPECT_EQ(same_full, 400);
  EXPECT_LT(same_partial, 400);
}

TEST(LearningModel, ZeroVarianceGroupsTeachNothingAndContrastTeachesMore) {
  LearningModel m(params(), 1);
  const double z = m.skill();
  const auto flat = m.train({{1, 1, 1, 1}, {0, 0, 0, 0}});
  EXPECT_EQ(flat.informative, 0);
  EXPECT_EQ(flat.zero_groups, 2);
  EXPECT_EQ(m.skill(), z);  // no update at all
  const auto weak = LearningModel::measure({{1, 1, 1, 0}}, params());
  const auto strong = LearningModel::measure({{1, 1, 0, 0}}, params());
  const auto more = LearningModel::measure({{1, 1, 0, 0}, {1, 0, 1, 0}}, params());
  EXPECT_GT(strong.rho, weak.rho);  // a balanced group has more spread
  EXPECT_GT(more.rho, strong.rho);  // two informative groups average noise out
  EXPECT_EQ(more.informative, 8);
  // With the batch's std, a group's spread sets its advantages' size.
  LearningParams global = params();
  global.global_std = true;
  EXPECT_GT(LearningModel::measure({{1, 1, 0, 0}}, global).rho, 0);
  const auto step = m.train({{1, 1, 0, 0}});
  EXPECT_NEAR(step.step, params().eta * step.rho, 1e-12);  // no step noise configured
  EXPECT_GT(m.score(), LearningModel(params(), 1).score());
}

// The event loops train on level counts (level_counts.hpp): the counts must be those of the very
// rewards plain_group() / selected_group() return (the same draws), and an update on the counts
// must be the update on the rewards, so that a run is the same run either way.
TEST(LearningModel, LevelCountsAreTheSameDrawsAndTheSameUpdate) {
  for (const int k : {1, 3}) {
    for (const bool global : {false, true}) {
      LearningParams p = params();
      p.reward_levels = k;
      p.global_std = global;
      p.step_noise = 0.7;
      LearningModel by_rewards(p, 5), by_counts(p, 5);
      LevelCounts batch(k);
      for (int it = 0; it < 60; ++it) {
        std::vector<std::vector<double>> groups;
        batch.clear();
        for (int i = 0; i < 12; ++i) {
          const bool select = i % 3 != 0;
          const bool reuse = i % 3 == 2;
          auto g = select ? by_rewards.selected_group(it, i, 32, 4, 8, 1, 6, reuse)
                          : by_rewards.plain_group(it, i, 6);
          if (select) {
            by_counts.add_selected_group(it, i, 32, 4, 8, 1, 6, reuse, batch);
          } else {
            by_counts.add_plain_group(it, i, 6, batch);
          }
          LevelCounts expected(k);
          expected.add_rewards(g);
          for (int l = 0; l <= k; ++l)
            ASSERT_EQ(batch.group(i)[l], expected.group(0)[l]) << "prompt " << i << " level " << l;
          EXPECT_NEAR(batch.variance(i), rl::variance(g), 1e-12);
          groups.push_back(std::move(g));
        }
        const UpdateReport a = by_rewards.train(groups);
        const UpdateReport b = by_counts.train(batch);
        EXPECT_EQ(a.informative, b.informative);
        EXPECT_EQ(a.zero_groups, b.zero_groups);
        EXPECT_NEAR(a.mean_std, b.mean_std, 1e-12);
        EXPECT_NEAR(a.rho, b.rho, 1e-12);
        ASSERT_NEAR(by_rewards.skill(), by_counts.skill(), 1e-9) << "iteration " << it;
      }
    }
  }
}

// A group whose rewards are all equal teaches nothing, also where summing G equal rewards misses
// the reward by a rounding residue (24 x 1/3): no advantage, no informative sample.
TEST(LearningModel, AnAllEqualGroupOfCountsIsFlatWhateverTheRounding) {
  LearningParams p = params();
  p.reward_levels = 3;
  LevelCounts batch(3);
  batch.add_rewards(std::vector<double>(24, 1.0 / 3));
  batch.add_rewards(std::vector<double>(24, 2.0 / 3));
  const UpdateReport r = LearningModel::measure(batch, p);
  EXPECT_EQ(r.zero_groups, 2);
  EXPECT_EQ(r.informative, 0);
  EXPECT_EQ(r.rho, 0.0);
  EXPECT_THROW(batch.add_rewards({0.5}), std::invalid_argument);  // not l / 3
  EXPECT_EQ(batch.groups(), 2);
}

// selected_group() (counts of observed levels) against observing every candidate and selecting
// with rl::select_max_variance: the same distribution of trained groups.
TEST(LearningModel, FastSelectionMatchesSelectingEveryObservedCandidate) {
  for (const bool reuse : {false, true}) {
    const LearningModel m(params(), 21);
    const int n = 16, g = 4, prompts = 6000;
    double exact_mean = 0, fast_mean = 0, exact_var = 0, fast_var = 0;
    int exact_zero = 0, fast_zero = 0;
    for (int i = 0; i < prompts; ++i) {
      std::vector<double> seen;
      for (int j = 0; j < n; ++j)
        seen.push_back(m.observed_reward(0, i, j, 4, 8, 1));
      std::vector<double> exact;
      for (std::size_t index : rl::select_max_variance(seen, g))
        exact.push_back(reuse ? seen[index] : m.reward(0, i, static_cast<int>(index)));
      const auto fast = m.selected_group(0, i, n, 4, 8, 1, g, reuse);
      ASSERT_EQ(fast.size(), static_cast<std::size_t>(g));
      for (double x : exact)
        exact_mean += x / (prompts * g);
      for (double x : fast)
        fast_mean += x / (prompts * g);
      exact_var += rl::variance(exact) / prompts;
      fast_var += rl::variance(fast) / prompts;
      exact_zero += rl::variance(exact) == 0 ? 1 : 0;
      fast_zero += rl::variance(fast) == 0 ? 1 : 0;
    }
    EXPECT_NEAR(fast_mean, exact_mean, 0.01) << reuse;
    EXPECT_NEAR(fast_var, exact_var, 0.004) << reuse;
    EXPECT_NEAR(static_cast<double>(fast_zero) / prompts, static_cast<double>(exact_zero) / prompts,
                0.015)
        << reuse;
  }
}

TEST(LearningModel, TheScoreIsTheMeanSuccessOverPrompts) {
  LearningParams p = params();
  p.reward_levels = 1;
  const LearningModel m(p, 11);
  double sum = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i)
    sum += m.reward(0, i, 0);
  EXPECT_NEAR(sum / n, m.score(), 0.012);
  EXPECT_LT(m.score_at(0.0), m.score_at(1.0));
}

// Stage 1 of the fit recovers a known starting distribution from simulated candidate rewards.
TEST(Calibration, RecoversTheStartingDistribution) {
  LearningParams truth = params();
  truth.z0 = 0.6;
  truth.sigma_d = 1.4;
  truth.reward_levels = 3;
  const LearningModel m(truth, 5);
  std::vector<std::vector<double>> prompts;
  for (int i = 0; i < 1500; ++i) {
    std::vector<double> r;
    for (int j = 0; j < 16; ++j)
      r.push_back(m.reward(0, i, j));
    prompts.push_back(r);
  }
  StartingFit moments;
  const LearningParams fitted = fit_starting(prompts, &moments);
  EXPECT_EQ(fitted.reward_levels, 3) << moments.k_raw;
  EXPECT_NEAR(fitted.z0, truth.z0, 0.12);
  EXPECT_NEAR(fitted.sigma_d, truth.sigma_d, 0.15);
}

// The contrast law (learning_model.hpp): a group moves its category's skill by its own contrast.
LearningParams contrast_params() {
  LearningParams p;
  p.law = Law::kContrast;
  p.z0 = 0.0;
  p.sigma_d = 1.0;
  p.reward_levels = 1;
  p.eta = 0.1;
  p.categories = 2;
  return p;
}

TEST(ContrastLaw, AFlatGroupTeachesNothingAndAContrastedOneItsOwnContrast) {
  LearningParams p = contrast_params();
  p.local_share = 1.0;  // all of it stays with the category
  LearningModel m(p, 1);
  LevelCounts flat(1);
  flat.add_group({0, false})[1] = 4;  // four successes
  flat.add_group({1, false})[0] = 4;  // four failures
  const UpdateReport none = m.train(flat);
  EXPECT_EQ(none.informative, 0);
  EXPECT_EQ(m.category_skill(0), 0.0);
  EXPECT_EQ(m.category_skill(1), 0.0);
  EXPECT_EQ(m.skill(), p.z0);
  // Two successes and two failures in category 1: A = +-1 (group std 0.5), contrast
  // s = sum A (r - 1/2) / G = 0.5; one of two groups, C = 2: u_1 += eta x 1 x 2 x 0.5 / 2.
  LevelCounts batch(1);
  batch.add_group({0, false})[0] = 4;
  int* c = batch.add_group({1, false});
  c[0] = 2;
  c[1] = 2;
  m.train(batch);
  EXPECT_EQ(m.category_skill(0), 0.0);
  EXPECT_NEAR(m.category_skill(1), p.eta * 2 * 0.5 / 2, 1e-3);  // the advantage's epsilon
  EXPECT_EQ(m.skill(), p.z0);                                   // no shared share
}

TEST(ContrastLaw, SelectionEfficiencyScalesOnlySelectedGroups) {
  LearningParams p = contrast_params();
  p.selection_efficiency = 0.5;
  const auto step = [&](bool selected) {
    LearningModel m(p, 1);
    LevelCounts batch(1);
    int* c = batch.add_group({0, selected});
    c[0] = 2;
    c[1] = 2;
    return m.train(batch).step;
  };
  EXPECT_GT(step(false), 0);
  EXPECT_NEAR(step(true), 0.5 * step(false), 1e-12);
}

// What selection gains is a consequence of the rewards, not a bound: with binary rewards on hard
// prompts plain groups of 8 are almost all flat and selection from 64 finds contrast, a gain far
// above what the cosine law allows (1 / rho of plain groups); with partial credit on middling
// prompts most plain groups already have contrast and selection adds little.
TEST(ContrastLaw, TheGainOfSelectionCanBeLargeOrSmall) {
  const auto mean_step = [](LearningParams p, bool select) {
    LearningModel m(p, 3);
    double total = 0;
    for (int k = 0; k < 40; ++k) {
      LevelCounts batch(p.reward_levels);
      for (int i = 0; i < 16; ++i) {
        if (select) {
          m.add_selected_group(k, i, 64, 10, 10, 0, 8, false, batch);
        } else {
          m.add_plain_group(k, i, 8, batch);
        }
      }
      LearningModel copy = m;  // the step of this batch, from the base's weights
      const double before = copy.score();
      copy.train(batch);
      total += copy.score() - before;
    }
    return total;
  };
  LearningParams hard = contrast_params();
  hard.z0 = -3.5;  // p ~ 0.03
  hard.sigma_d = 0.5;
  const double hard_gain = mean_step(hard, true) / std::max(1e-12, mean_step(hard, false));
  LearningParams easy = contrast_params();
  easy.reward_levels = 3;
  easy.z0 = 0.3;
  easy.sigma_d = 0.7;
  const double easy_gain = mean_step(easy, true) / mean_step(easy, false);
  EXPECT_GT(hard_gain, 3.0);
  EXPECT_LT(easy_gain, 2.0);
  EXPECT_GT(easy_gain, 1.0);
}

TEST(ContrastLaw, CategoriesStartWhereTheirOffsetsSay) {
  LearningParams p = contrast_params();
  p.category_offsets = {-2.0, 1.0};
  const LearningModel m(p, 1);
  EXPECT_EQ(m.category_skill(0), -2.0);
  EXPECT_EQ(m.category_skill(1), 1.0);
  p.category_offsets = {0.0};
  EXPECT_THROW(LearningModel(p, 1), std::invalid_argument);
}

TEST(EmbeddedReplay, KaplanMeierMedianMatchesAHandComputation) {
  // benchmark_stats.py's self-test: times 2, 3 (censored), 4, 4, 6 (censored): S drops to
  // 0.8 at 2 and to 0.8 * (1 - 2/3) at 4.
  EXPECT_EQ(km_median({{2, true}, {3, false}, {4, true}, {4, true}, {6, false}}), 4);
  EXPECT_TRUE(std::isinf(km_median({{30, false}, {30, false}, {10, true}})));
}

TEST(EmbeddedReplay, SelectionReachesTheTargetSoonerThanPlainGroups) {
  LearningParams p = params();
  p.eta = 0.08;
  p.noise = 30;  // the noisy regime our runs are in
  ReplayOptions none;
  none.mode = Mode::kNone;
  none.target = LearningModel(p, 0).score() + 0.05;
  ReplayOptions sync = none;
  sync.mode = Mode::kSync;
  const auto a = replay_many(p, none, 60);
  const auto b = replay_many(p, sync, 60);
  EXPECT_LT(b.km_median, a.km_median);
  EXPECT_LT(b.zero_share, a.zero_share);
  EXPECT_EQ(a.versions.front(), 0);
  EXPECT_EQ(a.versions.back(), none.iterations);
}

}  // namespace
}  // namespace spotlight::simulator
