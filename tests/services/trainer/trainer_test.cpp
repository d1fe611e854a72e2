#include <filesystem>
#include <fstream>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "common/config/config.hpp"
#include "common/config/error.hpp"
#include "common/model/safetensors.hpp"
#include "services/trainer/grpo_trainer.hpp"
#include "services/trainer/pretrain_cache.hpp"
#include "services/trainer/trainer_config.hpp"
#include "services/trainer/validation_schedule.hpp"
#include "tests/services/trainer/trainer_fixtures.hpp"

namespace spotlight::trainer {
namespace {

using testing::Fixture;
using testing::small_options;
using testing::temp_dir;

TEST(GrpoTrainer, FirstPpoRatioIsExactlyOneAndTheUpdateChangesTheWeights) {
  for (const std::string mode : {"none", "sync"}) {
    Fixture f(small_options(mode));
    const auto before = f.policy.weights_bytes();
    const auto report = f.trainer->run_iteration(0);
    EXPECT_GT(report.optimizer_steps, 0) << mode;
    EXPECT_EQ(report.first_ratio_max_deviation, 0.0) << mode;
    EXPECT_NE(f.policy.weights_bytes(), before) << mode;
    EXPECT_GT(report.reward_std, 0.0) << mode;
    ASSERT_TRUE(report.kendall_tau.has_value()) << mode;
    EXPECT_GE(*report.kendall_tau, -1.0);
    EXPECT_LE(*report.kendall_tau, 1.0);
  }
}

TEST(GrpoTrainer, SyncSelectionHasAtLeastTheVarianceOfRandomSeeds) {
  Fixture sync(small_options("sync"));
  Fixture none(small_options("none"));
  const auto prompts = sync.trainer->prompts_for(0);
  // Candidates 0..G-1 of sync are exactly the random seeds of none: selection can only add spread.
  EXPECT_GE(sync.trainer->run_iteration(0).selected_variance + 1e-12,
            none.trainer->run_iteration(0).selected_variance);
}

// The per-prompt record the simulator's learning model is fitted from (tools/simulator).
TEST(GrpoTrainer, ReportsPerPromptRewardsAndWhichCandidatesWereTrained) {
  const auto o = small_options("sync");
  Fixture sync(o);
  const auto report = sync.trainer->run_iteration(0);
  ASSERT_EQ(report.group_rewards.size(), static_cast<size_t>(o.prompts_per_iteration));
  ASSERT_EQ(report.candidate_rewards.size(), report.group_rewards.size());
  ASSERT_EQ(report.selected.size(), report.group_rewards.size());
  double sum = 0;
  for (size_t i = 0; i < report.group_rewards.size(); ++i) {
    ASSERT_EQ(report.group_rewards[i].size(), static_cast<size_t>(o.group_size));
    ASSERT_EQ(report.candidate_rewards[i].size(), static_cast<size_t>(o.candidates));
    ASSERT_EQ(report.selected[i].size(), static_cast<size_t>(o.group_size));
    for (size_t j = 0; j < report.selected[i].size(); ++j) {
      const int c = report.selected[i][j];
      ASSERT_GE(c, 0);
      ASSERT_LT(c, o.candidates);
      // Same seed, same weights, same steps: the rollout is the explored sample (up to float
      // rounding: exploration and rollout batch the sampler differently).
      EXPECT_NEAR(report.group_rewards[i][j], report.candidate_rewards[i][static_cast<size_t>(c)],
                  1e-4);
      sum += report.group_rewards[i][j];
    }
  }
  EXPECT_NEAR(sum / (o.prompts_per_iteration * o.group_size), report.reward_mean, 1e-9);
  Fixture none(small_options("none"));
  const auto plain = none.trainer->run_iteration(0);
  EXPECT_EQ(plain.group_rewards.size(), static_cast<size_t>(o.prompts_per_iteration));
  EXPECT_TRUE(plain.candidate_rewards.empty());
}

TEST(GrpoTrainer, ResumingFromACheckpointGivesTheSameWeightsAsAnUnbrokenRun) {
  // sync-stale keeps the previous iteration's weights in the checkpoint: resumed at iteration 2,
  // it explores with v_1 as the unbroken run does.
  for (const std::string mode : {"sync", "sync-stale"}) {
    auto o = small_options(mode);
    o.audit_every = 0;
    o.iterations = 3;
    o.run_dir = temp_dir() / "unbroken";
    Fixture unbroken(o);
    unbroken.trainer->run();

    o.run_dir = temp_dir() / "broken";
    o.iterations = 2;
    Fixture first_half(o);
    first_half.trainer->run();
    o.iterations = 3;
    Fixture second_half(o);
    EXPECT_EQ(second_half.trainer->resume(), 2) << mode;
    second_half.trainer->run();
    EXPECT_TRUE(second_half.policy.weights_bytes() == unbroken.policy.weights_bytes()) << mode;

    // metrics: base validation, then iterations 0, 1 and 2, once each
    std::ifstream in(o.run_dir / "metrics.jsonl");
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);)
      lines.push_back(line);
    ASSERT_EQ(lines.size(), 4u) << mode;
    EXPECT_NE(lines[1].find("\"iteration\":0"), std::string::npos);
    EXPECT_NE(lines[3].find("\"iteration\":2"), std::string::npos);
    if (mode == "sync-stale") {
      EXPECT_NE(lines[3].find("\"explore_weights_version\":1"), std::string::npos) << lines[3];
    }
  }
}

TEST(ValidationSchedule, AnIterationGridCountsIterations) {
  const ValidationSchedule every_three(3, 0, 0);
  EXPECT_FALSE(every_three.on_time_grid());
  EXPECT_FALSE(every_three.due(1, 100.0));
  EXPECT_FALSE(every_three.due(2, 0.0));
  EXPECT_TRUE(every_three.due(3, 0.0));
  EXPECT_TRUE(every_three.due(6, 0.0));
}

TEST(ValidationSchedule, ATimeGridValidatesOnceAtEachMultipleOnTheTimeLine) {
  ValidationSchedule schedule(3, 10.0, 0);  // every 10 s; the iteration count no longer counts
  EXPECT_TRUE(schedule.on_time_grid());
  EXPECT_FALSE(schedule.due(3, 9.9));
  EXPECT_TRUE(schedule.due(1, 10.0));
  schedule.validated(10.0);
  EXPECT_EQ(schedule.next_seconds(), 20.0);
  EXPECT_FALSE(schedule.due(2, 19.0));
  // A slow iteration that jumps past two grid points validates once, and the next point is the
  // first multiple after it.
  EXPECT_TRUE(schedule.due(3, 34.0));
  schedule.validated(34.0);
  EXPECT_EQ(schedule.next_seconds(), 40.0);
  // A validation off the grid (the last iteration, a spent budget) moves the next point too.
  schedule.validated(41.0);
  EXPECT_EQ(schedule.next_seconds(), 50.0);
  // A resumed run continues its time line: its first point is the first multiple after it.
  EXPECT_EQ(ValidationSchedule(3, 10.0, 25.0).next_seconds(), 30.0);
}

// On the time grid every validation but the base's and the last's lies at or after a grid point
// that no earlier validation passed: one point per grid step at most, whatever the iteration
// speed.
TEST(GrpoTrainer, ATimeGridPutsOneValidationAtOrAfterEachGridPoint) {
  auto o = small_options("none");
  o.audit_every = 0;
  o.iterations = 6;
  o.validate_every = 1000;  // would validate only after the last iteration
  o.validate_every_seconds = 1e-3;
  o.run_dir = temp_dir() / "time-grid";
  Fixture run(o);
  run.trainer->run();
  std::ifstream in(o.run_dir / "metrics.jsonl");
  std::vector<double> points;  // time line positions of the validations after the base
  for (std::string line; std::getline(in, line);) {
    const auto m = nlohmann::json::parse(line);
    if (m["iteration"].get<int64_t>() >= 0 && m.contains("validation"))
      points.push_back(m["elapsed_seconds"].get<double>());
  }
  // Every iteration takes far longer than 1 ms, so each one crosses a grid point: 6 validations,
  // where the iteration grid (validate_every 1000) would have given 1.
  ASSERT_EQ(points.size(), 6u);
  for (std::size_t i = 1; i < points.size(); ++i)
    EXPECT_GT(points[i], points[i - 1]);
}

TEST(GrpoTrainer, DeferredValidationScoresWhatInlineValidationWouldHave) {
  auto o = small_options("none");
  o.audit_every = 0;
  o.validate_every = 1;
  const auto inline_dir = temp_dir() / "inline";
  o.run_dir = inline_dir;
  Fixture inline_run(o);
  inline_run.trainer->run();
  const auto deferred_dir = temp_dir() / "deferred";
  o.run_dir = deferred_dir;
  o.defer_validation = true;
  Fixture deferred_run(o);
  deferred_run.trainer->run();
  EXPECT_EQ(deferred_run.policy.weights_bytes(), inline_run.policy.weights_bytes())
      << "deferring validation changes nothing about training";
  EXPECT_FALSE(std::filesystem::exists(deferred_dir / "validation.jsonl")) << "nothing scored yet";
  EXPECT_EQ(deferred_run.trainer->validate_deferred(), 3) << "the base and 2 iterations";
  EXPECT_EQ(deferred_run.trainer->validate_deferred(), 0) << "already scored: nothing again";

  const auto lines = [](const std::filesystem::path& path) {
    std::vector<nlohmann::json> out;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);)
      out.push_back(nlohmann::json::parse(line));
    return out;
  };
  std::map<int64_t, nlohmann::json> inline_scores, deferred_scores;
  for (const auto& m : lines(inline_dir / "metrics.jsonl"))
    inline_scores[m["iteration"].get<int64_t>()] = m["validation"];
  for (const auto& v : lines(deferred_dir / "validation.jsonl")) {
    EXPECT_EQ(v["iteration"].get<int64_t>(), v["version"].get<int64_t>() - 1);
    deferred_scores[v["iteration"].get<int64_t>()] = v["validation"];
  }
  ASSERT_EQ(inline_scores.size(), 3u);
  ASSERT_EQ(deferred_scores.size(), 3u);
  for (const auto& [iteration, v] : inline_scores) {
    EXPECT_DOUBLE_EQ(deferred_scores[iteration]["mean_reward"].get<double>(),
                     v["mean_reward"].get<double>())
        << iteration;
    EXPECT_EQ(deferred_scores[iteration]["samples"], 5);
  }
  // The time line: positive and increasing; deferred runs keep validation off it.
  double last = 0;
  for (const auto& m : lines(deferred_dir / "metrics.jsonl")) {
    if (m["iteration"].get<int64_t>() < 0) continue;
    EXPECT_FALSE(m.contains("validation"));
    EXPECT_GT(m["elapsed_seconds"].get<double>(), last);
    last = m["elapsed_seconds"].get<double>();
    EXPECT_GE(m["mean_abs_advantage"].get<double>(), 0.0);
  }
}

TEST(GrpoTrainer, KlToTheReferenceIsZeroBeforeTheFirstUpdate) {
  auto o = small_options("none");
  o.loss.kl_beta = 0.1;
  o.micro_batches_per_update = 100;  // a single update at the end: every KL term sees v_0
  o.audit_every = 0;
  policy::Policy reference(policy::PolicyOptions{"micro", "cpu", "float32", 1});
  Fixture f(o, &reference);
  reference.copy_weights_from(f.policy);
  EXPECT_EQ(f.trainer->run_iteration(0).kl, 0.0);
}

TEST(TrainerConfig, ErrorsNameTheBadKey) {
  auto expect_key = [](std::vector<std::string> overrides, const std::string& key) {
    config::ConfigSources s;
    s.overrides = std::move(overrides);
    try {
      grpo_options(config::Config::load(trainer_schema(), s));
      ADD_FAILURE() << "expected a ConfigError for " << key;
    } catch (const config::ConfigError& e) {
      EXPECT_EQ(e.key(), key) << e.what();
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  };
  expect_key({"trainer.lrr=1"}, "trainer.lrr");
  expect_key({"exploration.mode=fast"}, "exploration.mode");
  expect_key({"sampler.steps=0"}, "sampler.steps");
  expect_key({"exploration.candidates=4"}, "exploration.candidates");
  config::ConfigSources yaml;
  yaml.yaml = "trainer:\n  lr: 1e-4\n  groupsize: 3\n";
  try {
    config::Config::load(trainer_schema(), yaml);
    ADD_FAILURE() << "expected a ConfigError";
  } catch (const config::ConfigError& e) {
    EXPECT_EQ(e.key(), "trainer.groupsize") << e.what();
  }
}

// The base cache key follows what pretraining reads and nothing else (the trainer owns it; the
// launcher, the scripts and the container entrypoint ask the trainer for the path).
TEST(RecipeKey, FollowsWhatPretrainingReadsOnly) {
  const auto key = [](std::vector<std::string> overrides) {
    config::ConfigSources s;
    s.overrides = std::move(overrides);
    return recipe_key(config::Config::load(trainer_schema(), s));
  };
  const std::string base = key({});
  EXPECT_EQ(base.size(), 12u);
  EXPECT_EQ(key({"trainer.lr=1e-3", "run.seed=4", "run.threads=2", "model.base=x.safetensors",
                 "pretrain.output=y.safetensors", "pretrain.cache_dir=/c",
                 "pretrain.max_seconds=60", "redis.port=7000"}),
            base);
  EXPECT_NE(key({"model.preset=mini"}), base);
  EXPECT_NE(key({"model.init_seed=3"}), base);
  EXPECT_NE(key({"pretrain.steps=7"}), base);
  EXPECT_NE(key({"pretrain.category_weights=[1,0,0,0,0]"}), base);
  EXPECT_NE(key({"task.held_out_fraction=0.25"}), base);
  EXPECT_EQ(cached_base("/c", base).string(), "/c/base-" + base + ".safetensors");
  EXPECT_EQ(cached_base("/c", base, 500).string(), "/c/base-" + base + "-step500.safetensors");
}

}  // namespace
}  // namespace spotlight::trainer
