// The planner's pieces that need no Redis: the exploration policy seam and the
// options from the run configuration.

#include <csignal>
#include <thread>

#include <gtest/gtest.h>

#include "common/exploration/exploration_policy.hpp"
#include "common/exploration/explorer_directory.hpp"
#include "common/run/run_config.hpp"
#include "common/wire/messages.hpp"
#include "services/job/job_schema.hpp"
#include "services/planner/planner.hpp"
#include "services/planner/planner_config.hpp"

namespace spotlight::planner {
namespace {

using namespace std::chrono_literals;

config::Config load(std::vector<std::string> overrides) {
  config::ConfigSources sources;
  sources.overrides = std::move(overrides);
  return config::Config::load(job::run_schema(), sources);
}

TEST(FixedExplorationPolicy, DecidesTheSameWhateverTheContext) {
  exploration::FixedExplorationPolicy policy({.candidates = 24, .steps = 6});
  exploration::IterationContext a;
  exploration::IterationContext b;
  b.iteration = 9;
  b.trainer_iteration = 8;
  b.prompts = 64;
  b.live_explorers = 0;
  b.queue_depth = 100000;
  EXPECT_EQ(policy.decide(a), (exploration::ExplorationDecision{24, 6}));
  EXPECT_EQ(policy.decide(b), (exploration::ExplorationDecision{24, 6}));
  EXPECT_THROW(exploration::FixedExplorationPolicy({.candidates = 0, .steps = 6}),
               std::invalid_argument);
  EXPECT_THROW(exploration::FixedExplorationPolicy({.candidates = 1, .steps = 1}),
               std::invalid_argument);
}

TEST(PlannerConfig, TakesEveryOptionFromTheRunSchema) {
  const auto c =
      load({"run.id=r1", "run.seed=11", "trainer.iterations=7", "trainer.prompts_per_iteration=5",
            "planner.lookahead=2", "planner.poll_ms=250", "exploration.max_wait_seconds=1.5",
            "explorer.heartbeat_ms=400", "exploration.candidates=9", "sampler.steps=12"});
  const PlannerOptions o = planner_options(c);
  EXPECT_EQ(o.run_id, "r1");
  EXPECT_EQ(o.run_seed, 11u);
  EXPECT_EQ(o.iterations, 7);
  EXPECT_EQ(o.prompts_per_iteration, 5);
  EXPECT_EQ(o.lookahead, 2);
  EXPECT_EQ(o.poll_interval, 250ms);
  EXPECT_EQ(o.max_wait, 1500ms);
  EXPECT_EQ(o.heartbeat_period, 400ms);
  EXPECT_NO_THROW(o.validate());
  // exploration.steps = 0 means the sampler's steps.
  EXPECT_EQ(fixed_exploration(c), (exploration::ExplorationDecision{9, 12}));
  EXPECT_EQ(fixed_exploration(load({"exploration.steps=3"})).steps, 3);
}

TEST(PlannerOptions, ValidateNamesTheBadField) {
  PlannerOptions o;
  o.prompts_per_iteration = 0;
  try {
    o.validate();
    FAIL() << "expected PlannerError";
  } catch (const PlannerError& e) {
    EXPECT_NE(std::string(e.what()).find("prompts_per_iteration"), std::string::npos) << e.what();
  }
  PlannerOptions p;
  p.max_backoff = 1ms;  // below poll_interval
  EXPECT_THROW(p.validate(), PlannerError);
}

}  // namespace
}  // namespace spotlight::planner
