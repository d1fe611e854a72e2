// The planner's pieces that need no Redis: the exploration policy seam, heartbeat parsing, the
// key layout against run::RunKeys, options from the run configuration, the stop flag.

#include <csignal>
#include <thread>

#include <gtest/gtest.h>

#include "common/exploration/exploration_policy.hpp"
#include "common/exploration/explorer_directory.hpp"
#include "common/run/run_config.hpp"
#include "common/wire/messages.hpp"
#include "services/planner/planner.hpp"
#include "services/planner/planner_config.hpp"
#include "services/planner/planner_keys.hpp"
#include "services/planner/stop_flag.hpp"

namespace spotlight::planner {
namespace {

using namespace std::chrono_literals;

config::Config load(std::vector<std::string> overrides) {
  config::ConfigSources sources;
  sources.overrides = std::move(overrides);
  return config::Config::load(run::run_schema(), sources);
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

TEST(ParseHeartbeat, AcceptsDecimalMillisecondsAndTheWireMessage) {
  EXPECT_EQ(exploration::parse_heartbeat("1732931112345"), 1732931112345);
  wire::Heartbeat hb;
  hb.explorer_id = "x";
  hb.unix_ms = 42;
  EXPECT_EQ(exploration::parse_heartbeat(hb.encode()), 42);
  EXPECT_EQ(exploration::parse_heartbeat(""), std::nullopt);
  EXPECT_EQ(exploration::parse_heartbeat("12ms"), std::nullopt);
  EXPECT_EQ(exploration::parse_heartbeat(" 12"), std::nullopt);
  EXPECT_EQ(exploration::parse_heartbeat(std::string("\x93\x01\x02", 3)), std::nullopt);
}

TEST(PlannerKeys, AreTheRunKeys) {
  for (const std::string id : {"default", "run:with:colons", "x\x1fy"}) {
    const run::RunKeys run(id);
    const PlannerKeys keys = PlannerKeys::for_run(id);
    EXPECT_EQ(keys.prefix, run.prefix);
    EXPECT_EQ(keys.trainer_iteration, run.trainer_iteration);
    EXPECT_EQ(keys.trainer_timing, run.trainer_timing);
    EXPECT_EQ(keys.planner_state, run.planner_state);
    for (const std::string explorer : {"a", "host-123", "with:colon", ""}) {
      EXPECT_EQ(keys.explorer_heartbeat(explorer), run.explorer_heartbeat(explorer));
    }
    EXPECT_EQ(keys.absolute(keys.planner_state), run.prefix + ":" + run.planner_state);
  }
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

TEST(StopFlag, WaitsForItsTimeoutWhenNotRequested) {
  StopFlag stop;
  const auto begin = std::chrono::steady_clock::now();
  EXPECT_FALSE(stop.wait_for(30ms));
  EXPECT_GE(std::chrono::steady_clock::now() - begin, 30ms);
  EXPECT_FALSE(stop.requested());
}

TEST(StopFlag, WakesAWaiterAtOnceWhenRequested) {
  StopFlag stop;
  std::thread requester([&] { stop.request(); });
  const auto begin = std::chrono::steady_clock::now();
  EXPECT_TRUE(stop.wait_for(60s));
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 30s);
  requester.join();
  EXPECT_TRUE(stop.wait_for(0ms));  // stays requested
  EXPECT_EQ(stop.signal(), std::nullopt);
}

TEST(StopFlag, SigtermRequestsTheStop) {
  StopFlag stop;
  StopFlag::stop_on_signals(stop);
  ASSERT_EQ(std::raise(SIGTERM), 0);  // handled: the test process keeps running
  EXPECT_TRUE(stop.wait_for(10s));
  EXPECT_EQ(stop.signal(), SIGTERM);
}

}  // namespace
}  // namespace spotlight::planner
