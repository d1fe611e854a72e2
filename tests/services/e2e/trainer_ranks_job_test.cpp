// A data-parallel trainer (trainer.ranks = 2) in an async job with real explorers, as processes
// started by the local-cluster launcher; rank 1 is SIGKILLed in the middle of the run. Rank 0's
// next collective fails at once with an error naming the group (not a hang); the launcher stops
// it and restarts both ranks, which resume from rank 0's newest checkpoint. The job must finish
// with:
//   - the trainer's iterations an unbroken sequence (-1 = base validation, 0..K-1, each once):
//     the iteration the kill interrupted was redone, none counted twice;
//   - every task of every iteration with exactly one result, each acknowledged exactly once,
//     nothing leased or dead-lettered; every result acknowledged before the kill still there,
//     byte for byte; no prompt fell back to random seeds (no explored result was lost).
#include <chrono>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include "common/queue/redis_lease_queue.hpp"
#include "common/redis/client.hpp"
#include "common/run/run_config.hpp"
#include "common/run/schedule.hpp"
#include "common/wire/messages.hpp"
#include "tests/services/e2e/queue_results.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/wait_for.hpp"
#include "tools/cluster/cluster.hpp"

namespace spotlight {
namespace {

using namespace std::chrono_literals;
using testing::wait_for;

constexpr int kIterations = 6;
constexpr int kPrompts = 2;
constexpr int kCandidates = 6;
constexpr auto kJobTimeout = 600s;

std::vector<nlohmann::json> lines_of(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
  }
  return lines;
}

TEST(TrainerRanksJob, ARankKilledMidRunRestartsTheGroupAndLosesNothing) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  const auto dir = testing::make_temp_dir("spotlight-ranks");
  const std::string run_id = "ranks";
  cluster::ClusterOptions o;
  o.bin_dir = testing::binary_path("services");
  o.explorers = 2;
  o.trainer_ranks = 2;
  o.redis_appendfsync = "always";
  o.run.overrides = {
      "run.id=" + run_id,
      "run.dir=" + (dir / "run").string(),
      "model.preset=micro",
      "exploration.mode=async",
      "exploration.candidates=" + std::to_string(kCandidates),
      "exploration.max_wait_seconds=300",
      "trainer.iterations=" + std::to_string(kIterations),
      "trainer.prompts_per_iteration=" + std::to_string(kPrompts),
      "trainer.group_size=4",
      "trainer.micro_batch=4",  // two micro-batches: one per rank
      "sampler.steps=4",
      "validation.steps=3",
      "validation.every=100",
      "run.threads=1",
      "explorer.batch=4",
      "explorer.heartbeat_ms=200",
      "planner.poll_ms=50",
  };
  cluster::Cluster cluster(o);
  cluster.start();
  ASSERT_EQ(cluster.trainer_names(), (std::vector<std::string>{"trainer", "trainer-1"}));

  // Rank 1 is SIGKILLed once two iterations are checkpointed (in the third).
  const auto metrics = dir / "run" / "metrics.jsonl";
  ASSERT_TRUE(wait_for(
      [&] {
        return lines_of(metrics).size() >= 3 || !cluster.process("trainer")->running() ||
               !cluster.process("trainer-1")->running();
      },
      kJobTimeout));
  ASSERT_TRUE(cluster.process("trainer-1")->running()) << cluster.log_tail("trainer-1");
  redis::RedisOptions redis_options;
  redis_options.port = cluster.redis_port();
  queue::LeaseQueueOptions queue_options;
  queue_options.key_prefix = run::RunKeys(run_id).explore_queue;
  const auto acknowledged = testing::queue_results(redis_options, queue_options);
  ASSERT_FALSE(acknowledged.empty());
  const auto lines_before_kill = lines_of(metrics).size();
  const auto kill_time = std::chrono::steady_clock::now();
  cluster.process("trainer-1")->signal(SIGKILL);
  ASSERT_EQ(cluster.process("trainer-1")->wait_for(60s)->signal, SIGKILL);

  // Rank 0's collective fails with the group's error instead of waiting for the dead rank.
  ASSERT_TRUE(cluster.process("trainer")->wait_for(120s).has_value())
      << "rank 0 did not notice the dead rank\n"
      << cluster.log_tail("trainer");
  EXPECT_NE(cluster.log_tail("trainer", 20000).find("failed on rank 0 of 2"), std::string::npos)
      << cluster.log_tail("trainer");

  // The launcher restarts the group; the job finishes.
  const auto status = cluster.wait_trainer();
  ASSERT_TRUE(status.success()) << status.describe() << "\n"
                                << cluster.log_tail("trainer") << cluster.log_tail("trainer-1");
  EXPECT_EQ(cluster.trainer_group_restarts(), 1);
  const auto lines = lines_of(metrics);
  // Recovery: from the kill to the first iteration completed after it (informational).
  std::cout << "[ info     ] " << lines.size() - lines_before_kill
            << " iterations after the kill; the job ended "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - kill_time).count()
            << " s after it\n";
  EXPECT_NE(cluster.log_tail("trainer", 20000).find("resumed from checkpoint"), std::string::npos);
  cluster.drain();

  std::vector<int64_t> iterations, expected{-1};
  int fallbacks = 0;
  for (const auto& m : lines) {
    iterations.push_back(m.at("iteration").get<int64_t>());
    fallbacks += m.value("fallback_prompts", 0);
    if (m.at("iteration").get<int64_t>() >= 0) {
      EXPECT_EQ(m.value("ranks", 1), 2);
    }
  }
  for (int k = 0; k < kIterations; ++k)
    expected.push_back(k);
  EXPECT_EQ(iterations, expected);
  EXPECT_EQ(fallbacks, 0);

  queue::RedisLeaseQueue queue(redis_options, queue_options);
  const auto stats = queue.stats();
  EXPECT_EQ(stats.leased, 0);
  EXPECT_EQ(stats.dead_letters, 0);
  EXPECT_EQ(stats.results, stats.acked_total) << "a result without its acknowledgement or reverse";
  EXPECT_EQ(stats.results, kIterations * kPrompts * kCandidates);
  for (const auto& [id, bytes] : acknowledged)
    EXPECT_EQ(queue.result(id), std::optional<std::string>(bytes)) << id;
  std::cout << "[ info     ] results " << stats.results << ", acknowledged " << stats.acked_total
            << ", duplicate results " << stats.duplicate_results_total << ", lost 0 of "
            << acknowledged.size() << " acknowledged before the kill\n";
  cluster.stop();
  if (!::testing::Test::HasFailure() && std::getenv("SPOTLIGHT_KEEP_TEST_DIR") == nullptr) {
    std::filesystem::remove_all(dir);
  }
}

}  // namespace
}  // namespace spotlight
