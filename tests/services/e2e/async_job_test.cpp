// The whole system as processes, started by the local-cluster launcher (tools/cluster):
// redis-server, spotlight-reward, spotlight-planner, two spotlight-explorer and spotlight-trainer
// in exploration.mode=async, on the micro model. The job must finish with every seed task of every
// iteration accounted for exactly once.
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/queue/redis_lease_queue.hpp"
#include "common/redis/client.hpp"
#include "common/run/run_config.hpp"
#include "common/run/schedule.hpp"
#include "common/wire/messages.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tools/cluster/cluster.hpp"

namespace spotlight {
namespace {

using namespace std::chrono_literals;

constexpr int kIterations = 3;
constexpr int kPrompts = 2;
constexpr int kCandidates = 6;

// What both jobs share: an async run of the micro preset with short sampling and fast explorer
// and planner periods, kPrompts prompts an iteration, one thread a process.
std::vector<std::string> micro_job_settings(const std::filesystem::path& dir,
                                            const std::string& run_id) {
  return {
      "run.id=" + run_id,
      "run.dir=" + (dir / "run").string(),
      "model.preset=micro",
      "exploration.mode=async",
      "trainer.prompts_per_iteration=" + std::to_string(kPrompts),
      "trainer.micro_batch=4",
      "sampler.steps=4",
      "validation.steps=3",
      "run.threads=1",
      "explorer.batch=4",
      "explorer.heartbeat_ms=200",
      "planner.poll_ms=50",
  };
}

TEST(AsyncJob, FinishesWithEveryTaskAccountedForExactlyOnce) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  const auto dir = testing::make_temp_dir("spotlight-e2e");
  const std::string run_id = "e2e";
  // The local cluster: redis-server, reward, planner, two explorers and the trainer.
  cluster::ClusterOptions o;
  o.bin_dir = testing::binary_path("services");
  o.explorers = 2;
  o.run.overrides = micro_job_settings(dir, run_id);
  o.run.overrides.insert(o.run.overrides.end(),
                         {
                             "exploration.candidates=" + std::to_string(kCandidates),
                             "exploration.max_wait_seconds=120",
                             "trainer.iterations=" + std::to_string(kIterations),
                             "trainer.group_size=4",
                             "validation.prompts=5",
                             "validation.every=2",
                             "audit.every=1",
                             "audit.prompts=1",
                         });
  cluster::Cluster cluster(o);
  cluster.start();

  const auto trainer_status = cluster.process("trainer")->wait_for(600s);
  ASSERT_TRUE(trainer_status.has_value()) << "trainer did not finish\n"
                                          << cluster.log_tail("trainer");
  ASSERT_TRUE(trainer_status->success()) << cluster.log_tail("trainer");
  // Planner and explorers stop by themselves once the trainer is done.
  for (const char* name : {"planner", "explorer-1", "explorer-2"}) {
    const auto status = cluster.process(name)->wait_for(60s);
    ASSERT_TRUE(status.has_value()) << name << " still running after the trainer finished\n"
                                    << cluster.log_tail(name);
    EXPECT_TRUE(status->success()) << status->describe() << "\n" << cluster.log_tail(name);
  }
  const auto reward = cluster.process("reward")->terminate(30s);
  EXPECT_TRUE(reward.status.success() && !reward.escalated) << cluster.log_tail("reward");

  // Every task of every iteration has exactly one result, nothing is waiting, leased or dead.
  queue::LeaseQueueOptions queue_options;
  queue_options.key_prefix = run::RunKeys(run_id).explore_queue;
  redis::RedisOptions redis_options;
  redis_options.port = cluster.redis_port();
  queue::RedisLeaseQueue queue(redis_options, queue_options);
  const auto stats = queue.stats();
  EXPECT_EQ(stats.leased, 0);
  EXPECT_EQ(stats.dead_letters, 0);
  EXPECT_EQ(stats.results, stats.acked_total)
      << "a result without its acknowledgement or the reverse";
  int fresh_results = 0;
  for (int k = 0; k < kIterations; ++k) {
    for (int i = 0; i < kPrompts; ++i) {
      for (int j = 0; j < kCandidates; ++j) {
        const auto id = run::seed_task_id(k, i, j);
        const auto bytes = queue.result(id);
        if (!bytes) continue;  // the trainer may have moved on before a late task was explored
        const auto result = wire::SeedResult::decode(*bytes);
        EXPECT_EQ(result.iteration, k);
        EXPECT_EQ(result.prompt_index, i);
        EXPECT_EQ(result.seed, run::candidate_seed(0, k, i, j)) << id;
        // Tasks of iteration k ask for v_{k-1}; an explorer may be one version staler, or use a
        // newer version it already holds.
        EXPECT_GE(result.weights_version_used, std::max(0, k - 2)) << id;
        EXPECT_LE(result.weights_version_used, kIterations) << id;
        ++fresh_results;
      }
    }
  }
  EXPECT_EQ(fresh_results, stats.results) << "a result for a task that was never scheduled";
  // The trainer waited for every candidate of every iteration, so all were explored.
  EXPECT_EQ(fresh_results, kIterations * kPrompts * kCandidates);

  // The trainer ran an unbroken sequence of iterations and used explored seeds.
  std::ifstream metrics(dir / "run" / "metrics.jsonl");
  std::vector<int64_t> iterations;
  int fallbacks = 0;
  for (std::string line; std::getline(metrics, line);) {
    const auto m = nlohmann::json::parse(line);
    iterations.push_back(m.at("iteration").get<int64_t>());
    fallbacks += m.value("fallback_prompts", 0);
  }
  std::vector<int64_t> expected{-1};
  for (int k = 0; k < kIterations; ++k)
    expected.push_back(k);
  EXPECT_EQ(iterations, expected);
  EXPECT_EQ(fallbacks, 0) << "with a 120 s deadline every prompt should have explored seeds";
  const auto summary = nlohmann::json::parse(std::ifstream(dir / "run" / "summary.json"));
  EXPECT_TRUE(summary.contains("final_geneval_score"));
  cluster.stop();
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

// The ablation study's stall: an explorer refuses every task of prompt 1 (outside the limits of
// the run as it sees it), so each of those tasks is dead-lettered at its first failure
// (max_deliveries 1) and never gets a result. The trainer must count them lost and go on, not wait
// max_wait_seconds (an hour here, far above this test's timeout) in every iteration.
TEST(AsyncJob, DeadLetteredTasksAreLostNotWaitedFor) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  const auto dir = testing::make_temp_dir("spotlight-e2e");
  const std::string run_id = "e2e-dead";
  constexpr int kDeadIterations = 2;
  constexpr int kDeadCandidates = 4;
  cluster::ClusterOptions o;
  o.bin_dir = testing::binary_path("services");
  o.explorers = 0;  // the one below, with its own view of the run
  o.run.overrides = micro_job_settings(dir, run_id);
  o.run.overrides.insert(o.run.overrides.end(),
                         {
                             "exploration.candidates=" + std::to_string(kDeadCandidates),
                             "exploration.max_wait_seconds=3600",
                             "exploration.max_deliveries=1",
                             "trainer.iterations=" + std::to_string(kDeadIterations),
                             "trainer.group_size=2",
                             "validation.prompts=2",
                             "validation.every=100",
                         });
  cluster::Cluster cluster(o);
  cluster.start();
  std::vector<std::string> explorer{
      testing::binary_path("services/explorer/spotlight-explorer").string()};
  for (const auto& a : cluster.service_args())
    explorer.push_back(a);
  explorer.insert(explorer.end(),
                  {"--set", "explorer.id=explorer-1", "--set", "trainer.prompts_per_iteration=1"});
  cluster.add("explorer-1", "explorer", explorer);

  const auto trainer_status = cluster.process("trainer")->wait_for(600s);
  ASSERT_TRUE(trainer_status.has_value()) << "trainer did not finish\n"
                                          << cluster.log_tail("trainer");
  ASSERT_TRUE(trainer_status->success()) << cluster.log_tail("trainer");

  // Every task of prompt 1 was dead-lettered as out of limits, and nothing else.
  queue::LeaseQueueOptions queue_options;
  queue_options.key_prefix = run::RunKeys(run_id).explore_queue;
  redis::RedisOptions redis_options;
  redis_options.port = cluster.redis_port();
  queue::RedisLeaseQueue queue(redis_options, queue_options);
  const auto dead = queue.dead_letters(100);
  for (const auto& d : dead) {
    const auto id = run::parse_seed_task_id(d.task_id);
    ASSERT_TRUE(id) << d.task_id;
    EXPECT_EQ(id->prompt, 1) << d.task_id;
    EXPECT_NE(d.error.find("out_of_limits"), std::string::npos) << d.error;
  }
  EXPECT_EQ(dead.size(), static_cast<std::size_t>(kDeadIterations * kDeadCandidates));

  // The trainer counted each of them lost in its iteration; prompt 1 fell back to its own seeds.
  std::ifstream metrics(dir / "run" / "metrics.jsonl");
  int dead_lettered = 0, fallbacks = 0, trained = 0;
  for (std::string line; std::getline(metrics, line);) {
    const auto m = nlohmann::json::parse(line);
    if (m.at("iteration").get<int64_t>() < 0) continue;
    ++trained;
    EXPECT_EQ(m.value("dead_lettered_tasks", -1), kDeadCandidates) << line.substr(0, 300);
    dead_lettered += m.value("dead_lettered_tasks", 0);
    fallbacks += m.value("fallback_prompts", 0);
  }
  EXPECT_EQ(trained, kDeadIterations);
  EXPECT_EQ(dead_lettered, kDeadIterations * kDeadCandidates);
  EXPECT_EQ(fallbacks, kDeadIterations);
  const std::string trainer_log = cluster.log_tail("trainer", 100000);
  EXPECT_NE(trainer_log.find("was dead-lettered"), std::string::npos);
  EXPECT_NE(trainer_log.find("fallback 1 dead-lettered " + std::to_string(kDeadCandidates)),
            std::string::npos)
      << "the iteration line shows both";
  const auto summary = nlohmann::json::parse(std::ifstream(dir / "run" / "summary.json"));
  EXPECT_EQ(summary.value("dead_lettered_tasks", -1), kDeadIterations * kDeadCandidates);
  cluster.stop();
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spotlight
