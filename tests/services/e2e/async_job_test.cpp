// The whole system as processes: redis-server, spotlight-reward, spotlight-planner, two
// spotlight-explorer and spotlight-trainer in exploration.mode=async, on the micro model. The job
// must finish with every seed task of every iteration accounted for exactly once.
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include "common/queue/redis_lease_queue.hpp"
#include "common/run/run_config.hpp"
#include "common/run/schedule.hpp"
#include "common/wire/messages.hpp"
#include "tests/common/process/process.hpp"
#include "tests/common/redis/redis_server.hpp"

namespace spotlight {
namespace {

using namespace std::chrono_literals;
using testing::Process;

constexpr int kIterations = 3;
constexpr int kPrompts = 2;
constexpr int kCandidates = 6;

TEST(AsyncJob, FinishesWithEveryTaskAccountedForExactlyOnce) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  testing::RedisServer redis;
  const auto dir = testing::make_temp_dir("spotlight-e2e");
  const std::string run_id = "e2e";
  const int reward_port = testing::free_port();
  const int bus_port = testing::free_port();
  const std::vector<std::string> run_args{
      "--set", "run.id=" + run_id,
      "--set", "run.dir=" + (dir / "run").string(),
      "--set", "redis.port=" + std::to_string(redis.port()),
      "--set", "reward.endpoint=tcp://127.0.0.1:" + std::to_string(reward_port),
      "--set", "bus.trainer_endpoint=tcp://127.0.0.1:" + std::to_string(bus_port),
      "--set", "model.preset=micro",
      "--set", "exploration.mode=async",
      "--set", "exploration.candidates=" + std::to_string(kCandidates),
      "--set", "exploration.max_wait_seconds=120",
      "--set", "trainer.iterations=" + std::to_string(kIterations),
      "--set", "trainer.prompts_per_iteration=" + std::to_string(kPrompts),
      "--set", "trainer.group_size=4",
      "--set", "trainer.micro_batch=4",
      "--set", "sampler.steps=4",
      "--set", "validation.prompts=5",
      "--set", "validation.steps=3",
      "--set", "validation.every=2",
      "--set", "audit.every=1",
      "--set", "audit.prompts=1",
      "--set", "run.threads=1",
      "--set", "explorer.batch=4",
      "--set", "explorer.heartbeat_ms=200",
      "--set", "planner.poll_ms=50",
  };
  auto with = [&](std::vector<std::string> extra) {
    auto args = run_args;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  Process reward(testing::binary_path("services/reward/spotlight-reward"),
                 {"--set", "reward.bind=tcp://127.0.0.1:" + std::to_string(reward_port)},
                 dir / "reward.log");
  Process planner(testing::binary_path("services/planner/spotlight-planner"), run_args,
                  dir / "planner.log");
  Process explorer1(testing::binary_path("services/explorer/spotlight-explorer"),
                    with({"--set", "explorer.id=e1"}), dir / "explorer-1.log");
  Process explorer2(testing::binary_path("services/explorer/spotlight-explorer"),
                    with({"--set", "explorer.id=e2"}), dir / "explorer-2.log");
  Process trainer(testing::binary_path("services/trainer/spotlight-trainer"), with({"train"}),
                  dir / "trainer.log");

  const auto trainer_status = trainer.wait(600s);
  ASSERT_TRUE(trainer_status.has_value()) << "trainer did not finish\n" << trainer.log_tail();
  ASSERT_EQ(*trainer_status, 0) << trainer.log_tail();
  // Planner and explorers stop by themselves once the trainer is done.
  for (auto* p : {&planner, &explorer1, &explorer2}) {
    const auto status = p->wait(60s);
    ASSERT_TRUE(status.has_value()) << "still running after the trainer finished\n"
                                    << p->log_tail();
    EXPECT_EQ(*status, 0) << p->log_tail();
  }
  reward.signal(SIGTERM);
  EXPECT_EQ(reward.wait(30s), std::optional<int>(0)) << reward.log_tail();

  // Every task of every iteration has exactly one result, nothing is waiting, leased or dead.
  queue::LeaseQueueOptions queue_options;
  queue_options.key_prefix = run::RunKeys(run_id).explore_queue;
  queue::RedisLeaseQueue queue(redis.client_options(), queue_options);
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
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spotlight
