#pragma once
// Shared by the planner's Redis tests: a real redis-server per test suite, the run configuration
// (job::run_schema() with --set style overrides and a run id unique to the running test), and
// read-only views of what the planner wrote (the task stream, the run's records).

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/config/config.hpp"
#include "common/queue/redis_lease_queue.hpp"
#include "common/redis/client.hpp"
#include "common/run/run_config.hpp"
#include "common/wire/messages.hpp"
#include "services/job/job_schema.hpp"
#include "tests/support/redis_server.hpp"

namespace spotlight::planner::test {

inline constexpr std::chrono::milliseconds kPatience{20000};  // for conditions that should hold

class RedisFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (spotlight::testing::RedisServer::find_executable()) {
      server_ = std::make_unique<spotlight::testing::RedisServer>();
    }
  }
  static void TearDownTestSuite() { server_.reset(); }
  void SetUp() override { SPOTLIGHT_REQUIRE_REDIS_SERVER(); }

  static spotlight::testing::RedisServer& server() { return *server_; }

  // A run id unique to the running test (suites share one server).
  static std::string run_id() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return std::string("t-") + info->test_suite_name() + "-" + info->name();
  }

  // The run configuration: small sizes, fast polling, this test's run id and server, then
  // `overrides` ("key=value", applied last).
  static config::Config make_config(const std::vector<std::string>& overrides = {}) {
    config::ConfigSources sources;
    sources.overrides = {"run.id=" + run_id(),
                         "redis.port=" + std::to_string(server().port()),
                         "run.seed=7",
                         "trainer.iterations=4",
                         "trainer.prompts_per_iteration=3",
                         "exploration.candidates=5",
                         "exploration.lease_timeout_ms=60000",
                         "planner.lookahead=1",
                         "planner.poll_ms=10"};
    sources.overrides.insert(sources.overrides.end(), overrides.begin(), overrides.end());
    return config::Config::load(job::run_schema(), sources);
  }

  static run::RunKeys keys() { return run::RunKeys(run_id()); }

  static redis::RedisClient client() { return redis::RedisClient(server().client_options()); }

  static queue::RedisLeaseQueue make_queue(const config::Config& config) {
    return queue::RedisLeaseQueue(run::redis_options(config), run::explore_queue_options(config));
  }

  // The Redis key of one of the run's relative keys (RunKeys: relative to keys().prefix).
  static std::string redis_key(const std::string& relative) {
    return keys().prefix + ":" + relative;
  }
  // Sets one of the run's relative keys to raw bytes.
  static void set_key(const std::string& relative, const std::string& value) {
    client().command({"SET", redis_key(relative), value});
  }
  static std::optional<std::string> get_key(const std::string& relative) {
    return client().command({"GET", redis_key(relative)}).as_optional_string();
  }
  // What the trainer writes: its progress and the timing of its last iteration.
  static void set_trainer_iteration(std::int64_t iteration) {
    set_key(keys().trainer_iteration,
            wire::TrainerProgress{.iteration = iteration, .unix_ms = 1}.encode());
  }
  static void set_trainer_timing(const wire::TrainerTiming& timing) {
    set_key(keys().trainer_timing, timing.encode());
  }
  // The highest iteration the planner has enqueued (its wire::PlannerProgress record).
  static std::optional<std::int64_t> planner_state() {
    const auto v = get_key(keys().planner_state);
    if (!v) return std::nullopt;
    return wire::PlannerProgress::decode(*v).enqueued_through;
  }
  // The planner's plan record of iteration t.
  static std::optional<wire::PlanRecord> plan(std::int64_t t) {
    const auto v = get_key(keys().plan(t));
    if (!v) return std::nullopt;
    return wire::PlanRecord::decode(*v);
  }

  // Every entry of the task stream (<explore_queue>:tasks), decoded, by task id. Passive: no
  // lease, no consumer group read. Fails the test on a duplicate task id.
  static std::map<std::string, wire::SeedTask> stream_tasks() {
    const redis::Reply r = client().command({"XRANGE", keys().explore_queue + ":tasks", "-", "+"});
    std::map<std::string, wire::SeedTask> out;
    for (const auto& entry : r.as_array()) {
      const auto& fields = entry.as_array().at(1).as_array();
      std::string task, payload;
      for (std::size_t i = 0; i + 1 < fields.size(); i += 2) {
        if (fields[i].as_string() == "task") task = fields[i + 1].as_string();
        if (fields[i].as_string() == "payload") payload = fields[i + 1].as_string();
      }
      EXPECT_FALSE(out.count(task)) << "task " << task << " is in the stream twice";
      out[task] = wire::SeedTask::decode(payload);
    }
    return out;
  }

 private:
  static inline std::unique_ptr<spotlight::testing::RedisServer> server_;
};

}  // namespace spotlight::planner::test
