// TrainerMetrics: each IterationReport shows up in the exposition under the names the dashboards
// query; the base validation sets the score without counting an iteration.
#include "services/trainer/trainer_metrics.hpp"

#include <string>

#include <gtest/gtest.h>

#include "common/metrics/metrics.hpp"

namespace spotlight::trainer {
namespace {

double value_of(const metrics::Registry& registry, const std::string& series) {
  const std::string text = registry.text();
  const auto at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

TEST(TrainerMetrics, ReportsBecomeMetrics) {
  metrics::Registry registry("trainer");
  TrainerMetrics m(registry, 10, 32);
  m.started(0);
  IterationReport base;
  base.iteration = -1;
  base.validation = ValidationReport{.geneval_score = 0.25, .mean_reward = 0.5};
  m.observe(base);
  EXPECT_EQ(value_of(registry, "spotlight_trainer_validation_score"), 0.25);
  EXPECT_EQ(value_of(registry, "spotlight_trainer_iterations_total"), 0);
  EXPECT_EQ(value_of(registry, "spotlight_trainer_iterations_target"), 10);

  IterationReport r;
  r.iteration = 0;
  r.reward_mean = 0.4;
  r.zero_std_ratio = 0.125;
  r.rollout_seconds = 2;
  r.reward_seconds = 0.5;
  r.train_seconds = 3;
  r.explore_seconds = 1;
  r.iteration_seconds = 6.5;
  r.kendall_tau = 0.75;
  r.dead_lettered_tasks = 3;
  m.observe(r);
  r.iteration = 1;
  r.kendall_tau.reset();
  m.observe(r);
  EXPECT_EQ(value_of(registry, "spotlight_trainer_iterations_completed"), 2);
  EXPECT_EQ(value_of(registry, "spotlight_trainer_weights_version"), 2);
  EXPECT_EQ(value_of(registry, "spotlight_trainer_iterations_total"), 2);
  EXPECT_EQ(value_of(registry, "spotlight_trainer_samples_total"), 64);
  EXPECT_EQ(value_of(registry, "spotlight_trainer_reward_mean"), 0.4);
  EXPECT_EQ(value_of(registry, "spotlight_trainer_zero_std_group_ratio"), 0.125);
  EXPECT_EQ(value_of(registry, "spotlight_trainer_kendall_tau"), 0.75);  // kept until re-audited
  EXPECT_EQ(value_of(registry, "spotlight_trainer_dead_lettered_tasks_total"), 6);
  EXPECT_EQ(value_of(registry, "spotlight_trainer_step_seconds_total{phase=\"rollout\"}"), 4);
  EXPECT_EQ(value_of(registry, "spotlight_trainer_step_seconds_total{phase=\"wait_for_seeds\"}"),
            2);
  EXPECT_EQ(value_of(registry, "spotlight_trainer_step_seconds{phase=\"train\"}"), 3);
  EXPECT_EQ(value_of(registry, "spotlight_trainer_iteration_seconds_count"), 2);
  EXPECT_EQ(value_of(registry, "spotlight_trainer_validation_score"), 0.25);  // not re-validated
}

// Each rank of a data-parallel trainer: its own series, labelled with its rank.
TEST(RankMetrics, EachRanksShareIsLabelledWithItsRank) {
  metrics::Registry registry("trainer");
  RankMetrics m(registry, 1, 2);
  IterationReport r;
  r.iteration = 0;
  r.iteration_seconds = 4;
  r.rollout_seconds = 1.5;
  r.reward_seconds = 0.5;
  r.train_seconds = 2;
  r.allreduce_seconds = 0.25;
  r.allreduce_bytes = 1000;
  m.observe(r);
  m.observe(r);
  EXPECT_EQ(value_of(registry, "spotlight_trainer_group_ranks{rank=\"1\"}"), 2);
  EXPECT_EQ(value_of(registry, "spotlight_trainer_rank_iterations_total{rank=\"1\"}"), 2);
  EXPECT_EQ(value_of(registry, "spotlight_trainer_rank_iteration_seconds{rank=\"1\"}"), 4);
  EXPECT_EQ(value_of(registry,
                     "spotlight_trainer_rank_phase_seconds_total{phase=\"rollout\",rank=\"1\"}"),
            4);
  EXPECT_EQ(
      value_of(registry, "spotlight_trainer_rank_phase_seconds_total{phase=\"train\",rank=\"1\"}"),
      3.5);
  EXPECT_EQ(value_of(registry,
                     "spotlight_trainer_rank_phase_seconds_total{phase=\"allreduce\",rank=\"1\"}"),
            0.5);
  EXPECT_EQ(value_of(registry, "spotlight_trainer_rank_allreduce_bytes_total{rank=\"1\"}"), 2000);
}

}  // namespace
}  // namespace spotlight::trainer
