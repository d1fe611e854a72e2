// The shared run schema refuses, in every service that loads it (trainer, planner, explorers),
// what cannot work: an empty run directory, a device string that names no device.
#include "common/run/run_config.hpp"

#include <gtest/gtest.h>

#include "common/config/config.hpp"
#include "common/run/task_checks.hpp"
#include "services/job/job_schema.hpp"

namespace spotlight::run {
namespace {

config::ConfigError load_error(std::vector<std::string> overrides) {
  config::ConfigSources sources;
  sources.overrides = std::move(overrides);
  try {
    exploration_options(config::Config::load(job::run_schema(), sources));
  } catch (const config::ConfigError& e) {
    return e;
  }
  return config::ConfigError("", "");
}

std::string error_key(std::vector<std::string> overrides) {
  config::ConfigSources sources;
  sources.overrides = std::move(overrides);
  try {
    config::Config::load(job::run_schema(), sources);
  } catch (const config::ConfigError& e) {
    return e.key();
  }
  return "";
}

TEST(RunSchema, AnEmptyRunDirIsRefused) {
  EXPECT_EQ(error_key({"run.dir="}), "run.dir");
  EXPECT_EQ(error_key({"run.dir=/tmp/x"}), "");
}

TEST(RunSchema, DeviceStringsAreCheckedForForm) {
  for (const char* ok : {"cpu", "cuda", "cuda:0", "cuda:99"}) {
    EXPECT_EQ(error_key({std::string("model.device=") + ok}), "") << ok;
  }
  for (const char* bad : {"", "gpu", "cuda:", "cuda:x", "cuda:-1", "CPU", "cuda:0 "}) {
    EXPECT_EQ(error_key({std::string("model.device=") + bad}), "model.device") << bad;
  }
}

TEST(RunSchema, RewardKindReachesTheTaskOptions) {
  EXPECT_EQ(task::task_options(config::Config::load(job::run_schema())).reward_kind,
            task::RewardKind::kPartial);
  config::ConfigSources sources;
  sources.overrides = {"reward.kind=strict"};
  EXPECT_EQ(task::task_options(config::Config::load(job::run_schema(), sources)).reward_kind,
            task::RewardKind::kStrict);
  EXPECT_EQ(error_key({"reward.kind=binary"}), "reward.kind");
  EXPECT_EQ(error_key({"trainer.max_seconds=-1"}), "trainer.max_seconds");
}

// The closed choices are enums: each name maps to its value, any other is refused with the list.
TEST(RunSchema, ExplorationChoicesAreParsedOnce) {
  config::ConfigSources sources;
  sources.overrides = {"exploration.mode=sync-stale", "exploration.reuse=off_policy",
                       "exploration.allocation=adaptive", "planner.policy=deadline"};
  const ExplorationOptions o =
      exploration_options(config::Config::load(job::run_schema(), sources));
  EXPECT_EQ(o.mode, ExplorationMode::kSyncStale);
  EXPECT_EQ(o.reuse, Reuse::kOffPolicy);
  EXPECT_EQ(o.allocation, Allocation::kAdaptive);
  EXPECT_EQ(o.policy, PlannerPolicy::kDeadline);
  EXPECT_TRUE(explores_stale_weights(o.mode));
  EXPECT_FALSE(needs_services(o.mode));
  for (const auto& c : kExplorationModes)
    EXPECT_EQ(to_string(c.value), c.name);
}

TEST(RunSchema, AnUnknownChoiceListsTheAllowedNames) {
  EXPECT_EQ(std::string(load_error({"exploration.mode=asynk"}).what()),
            "config: 'exploration.mode' must be one of none|sync|sync-stale|async|offload, got "
            "'asynk' (in --set)");
  EXPECT_EQ(std::string(load_error({"planner.policy=ucb"}).what()),
            "config: 'planner.policy' must be one of fixed|bandit|deadline, got 'ucb' (in --set)");
  EXPECT_EQ(std::string(load_error({"exploration.reuse=yes"}).what()),
            "config: 'exploration.reuse' must be one of off|on_policy|off_policy, got 'yes' (in "
            "--set)");
  EXPECT_EQ(std::string(load_error({"exploration.allocation=greedy"}).what()),
            "config: 'exploration.allocation' must be one of fixed|adaptive, got 'greedy' (in "
            "--set)");
  EXPECT_EQ(std::string(load_error({"reward.kind=binary"}).what()),
            "config: 'reward.kind' must be one of partial|strict, got 'binary' (in --set)");
}

// Offload explores nothing: a policy other than fixed is refused once, for every service.
TEST(RunSchema, OffloadNeedsTheFixedPolicy) {
  EXPECT_EQ(load_error({"exploration.mode=offload", "planner.policy=bandit"}).key(),
            "planner.policy");
  EXPECT_EQ(load_error({"exploration.mode=offload"}).key(), "");
  EXPECT_EQ(load_error({"exploration.mode=async", "planner.policy=bandit"}).key(), "");
}

TEST(RunSchema, RedisBackoffComesFromTheRetryKeys) {
  config::ConfigSources sources;
  sources.overrides = {"redis.retry_initial_ms=50", "redis.retry_max_ms=20"};
  const auto backoff = redis_backoff(config::Config::load(job::run_schema(), sources));
  EXPECT_EQ(backoff.initial.count(), 50);
  EXPECT_EQ(backoff.max.count(), 50) << "the cap is never below the first back-off";
}

// Under adaptive allocation the planner gives a prompt up to N x exploration.adaptive_cap
// candidates; explorers once refused every candidate above the largest N as out of the run's
// limits, and the trainer waited exploration.max_wait_seconds for them (the ablation study's
// async-adaptive runs: 120 s iterations whenever one prompt needed more than 32 candidates).
TEST(RunSchema, TaskLimitsLeaveRoomForTheAdaptiveCap) {
  const auto limits = [](std::vector<std::string> overrides) {
    config::ConfigSources sources;
    sources.overrides = std::move(overrides);
    return task_limits(config::Config::load(job::run_schema(), sources)).max_candidates;
  };
  const std::vector<std::string> grid = {"exploration.candidates=16", "planner.candidates=[8,32]"};
  EXPECT_EQ(limits(grid), 32);
  auto adaptive = grid;
  adaptive.insert(adaptive.end(),
                  {"exploration.allocation=adaptive", "exploration.adaptive_cap=3"});
  EXPECT_EQ(limits(adaptive), 96);
  adaptive.back() = "exploration.adaptive_cap=64";
  adaptive.front() = "exploration.candidates=100";
  EXPECT_EQ(limits(adaptive), kMaxAdaptiveCandidates);
}

}  // namespace
}  // namespace spotlight::run
