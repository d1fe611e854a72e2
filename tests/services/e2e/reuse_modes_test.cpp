// The benchmark's baselines of issue #14 as processes, on the micro model:
//  - offload: the planner enqueues iteration k's rollouts (G seeds per prompt) once v_k is
//    published, an explorer samples them with exactly v_k and keeps their trajectories, the
//    trainer trains on them without sampling and is idle (accounted) while it waits;
//  - sync-stale: the trainer explores with the previous iteration's weights, also across a
//    SIGKILL and restart (the weights travel in the checkpoint).
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include "common/queue/redis_lease_queue.hpp"
#include "common/redis/client.hpp"
#include "common/run/run_config.hpp"
#include "common/run/schedule.hpp"
#include "common/wire/messages.hpp"
#include "tests/common/process/process.hpp"
#include "tests/common/redis/redis_server.hpp"
#include "tests/common/redis/wait_for.hpp"

namespace spotlight {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;
using testing::Process;

std::vector<Json> metric_lines(const std::filesystem::path& run_dir) {
  std::ifstream in(run_dir / "metrics.jsonl");
  std::vector<Json> out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(Json::parse(line));
  }
  return out;
}

std::vector<std::string> small_job(const std::filesystem::path& run_dir, int iterations) {
  return {"--set", "run.dir=" + run_dir.string(),
          "--set", "model.preset=micro",
          "--set", "trainer.iterations=" + std::to_string(iterations),
          "--set", "trainer.prompts_per_iteration=2",
          "--set", "trainer.group_size=4",
          "--set", "trainer.micro_batch=4",
          "--set", "exploration.candidates=6",
          "--set", "sampler.steps=4",
          "--set", "validation.prompts=5",
          "--set", "validation.steps=3",
          "--set", "validation.every=100",
          "--set", "audit.every=0",
          "--set", "run.threads=1"};
}

// redis-server, the reward service, the planner, one explorer and the trainer of a small job in
// `mode` with `extra` settings, run to the end. Every process must exit 0.
struct ServicesJob {
  ServicesJob(const std::string& mode, const std::vector<std::string>& extra, int iterations)
      : dir(testing::make_temp_dir("spotlight-" + mode)), run_id(mode) {
    const int reward_port = testing::free_port();
    auto args = small_job(dir / "run", iterations);
    std::vector<std::string> settings{
        "run.id=" + run_id,
        "redis.port=" + std::to_string(redis.port()),
        "reward.endpoint=tcp://127.0.0.1:" + std::to_string(reward_port),
        "bus.trainer_endpoint=tcp://127.0.0.1:" + std::to_string(testing::free_port()),
        "exploration.mode=" + mode,
        "exploration.max_wait_seconds=120",
        "explorer.batch=4",
        "explorer.heartbeat_ms=200",
        "planner.poll_ms=20"};
    settings.insert(settings.end(), extra.begin(), extra.end());
    for (const auto& s : settings) {
      args.push_back("--set");
      args.push_back(s);
    }
    auto with = [&](std::vector<std::string> more) {
      auto a = args;
      a.insert(a.end(), more.begin(), more.end());
      return a;
    };
    Process reward(testing::binary_path("services/reward/spotlight-reward"),
                   {"--set", "reward.bind=tcp://127.0.0.1:" + std::to_string(reward_port)},
                   dir / "reward.log");
    Process planner(testing::binary_path("services/planner/spotlight-planner"), args,
                    dir / "planner.log");
    Process explorer(testing::binary_path("services/explorer/spotlight-explorer"),
                     with({"--set", "explorer.id=e1"}), dir / "explorer.log");
    Process trainer(testing::binary_path("services/trainer/spotlight-trainer"), with({"train"}),
                    dir / "trainer.log");
    const auto status = trainer.wait(600s);
    EXPECT_TRUE(status.has_value()) << "trainer did not finish\n" << trainer.log_tail();
    EXPECT_EQ(status, std::optional<int>(0)) << trainer.log_tail();
    for (auto* p : {&planner, &explorer}) {
      const auto s = p->wait(60s);
      EXPECT_TRUE(s.has_value()) << "still running after the trainer finished\n" << p->log_tail();
      EXPECT_EQ(s, std::optional<int>(0)) << p->log_tail();
    }
    reward.signal(SIGTERM);
    EXPECT_EQ(reward.wait(30s), std::optional<int>(0)) << reward.log_tail();
  }
  ~ServicesJob() {
    if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
  }
  // Trajectory keys left in Redis.
  size_t trajectories_left() {
    redis::RedisClient client(redis.client_options());
    return client.command({"KEYS", run::RunKeys(run_id).trajectories + ":*"}).as_array().size();
  }

  testing::RedisServer redis;
  std::filesystem::path dir;
  std::string run_id;
};

TEST(ReuseModes, OffloadTrainsOnTheExplorersRolloutsOfTheCurrentWeights) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  constexpr int kIterations = 3, kPrompts = 2, kGroup = 4;
  ServicesJob job("offload", {}, kIterations);
  ASSERT_FALSE(::testing::Test::HasFailure());
  const auto& dir = job.dir;
  const auto& run_id = job.run_id;
  auto& redis = job.redis;

  // Exactly the rollouts were enqueued (G per prompt, no more) and sampled with exactly v_k.
  queue::LeaseQueueOptions queue_options;
  queue_options.key_prefix = run::RunKeys(run_id).explore_queue;
  queue::RedisLeaseQueue queue(redis.client_options(), queue_options);
  const auto stats = queue.stats();
  EXPECT_EQ(stats.enqueued_total, kIterations * kPrompts * kGroup);
  EXPECT_EQ(stats.results, kIterations * kPrompts * kGroup);
  EXPECT_EQ(stats.dead_letters, 0);
  for (int k = 0; k < kIterations; ++k) {
    for (int i = 0; i < kPrompts; ++i) {
      for (int j = 0; j < kGroup; ++j) {
        const auto bytes = queue.result(run::seed_task_id(k, i, j));
        ASSERT_TRUE(bytes.has_value()) << run::seed_task_id(k, i, j);
        EXPECT_EQ(wire::SeedResult::decode(*bytes).weights_version_used, k);
      }
    }
  }
  // The trainer sampled nothing and trained on every rollout with ratio 1 at its first update.
  const auto lines = metric_lines(dir / "run");
  ASSERT_EQ(lines.size(), static_cast<size_t>(kIterations + 1));
  for (int k = 0; k < kIterations; ++k) {
    const Json& m = lines[k + 1];
    SCOPED_TRACE(m.dump());
    EXPECT_EQ(m.at("iteration"), k);
    EXPECT_EQ(m.at("rollouts_reused"), kPrompts * kGroup);
    EXPECT_EQ(m.at("rollouts_sampled"), 0);
    EXPECT_EQ(m.at("rollouts_off_policy"), 0);
    EXPECT_EQ(m.at("rollout_sampler_steps"), 0);
    EXPECT_EQ(m.at("trajectories_rejected"), 0);
    EXPECT_EQ(m.at("fallback_prompts"), 0);
    EXPECT_EQ(m.at("first_ratio_max_deviation").get<double>(), 0.0);
    EXPECT_GT(m.at("explore_seconds").get<double>(), 0.0) << "the wait for the rollouts";
  }
  // Accounting: the reserved side was idle while the spot side sampled, and the reverse.
  const auto summary = Json::parse(std::ifstream(dir / "run" / "summary.json"));
  EXPECT_GT(summary.at("cost").at("reserved_idle_device_seconds").get<double>(), 0.0);
  EXPECT_GT(summary.at("cost").at("spot_busy_device_seconds").get<double>(), 0.0);
  EXPECT_GT(summary.at("cost").at("spot_idle_device_seconds").get<double>(), 0.0);
  EXPECT_EQ(summary.at("reuse").at("rollouts_sampled"), 0);
  // Every trajectory was deleted once trained on.
  EXPECT_EQ(job.trajectories_left(), 0u);
}

TEST(ReuseModes, AsyncOffPolicyTrainsOnTheExplorersStaleTrajectories) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  constexpr int kIterations = 3, kRollouts = 2 * 4;
  // Without the weights subscription: an explorer that prefetched v_1 would explore some of
  // iteration 1's candidates with it (fresher, on-policy), and how many depends on timing. This
  // test is about the stale path; prefetching is weights_prefetch_test's.
  ServicesJob job("async", {"exploration.reuse=off_policy", "bus.subscribe=false"}, kIterations);
  ASSERT_FALSE(::testing::Test::HasFailure());
  const auto lines = metric_lines(job.dir / "run");
  ASSERT_EQ(lines.size(), static_cast<size_t>(kIterations + 1));
  for (int k = 0; k < kIterations; ++k) {
    const Json& m = lines[k + 1];
    SCOPED_TRACE(m.dump());
    EXPECT_EQ(m.at("rollouts_reused"), kRollouts) << "the trainer samples nothing";
    EXPECT_EQ(m.at("rollouts_sampled"), 0);
    EXPECT_EQ(m.at("rollout_sampler_steps"), 0);
    EXPECT_EQ(m.at("trajectories_rejected"), 0);
  }
  // Iteration 0 is explored with v_0, the trainer's own weights: on-policy, ratio exactly 1.
  EXPECT_EQ(lines[1].at("rollouts_off_policy"), 0);
  EXPECT_EQ(lines[1].at("first_ratio_max_deviation").get<double>(), 0.0);
  // Iteration 1 is explored with v_0 (planned one iteration ahead): every rollout is stale. The
  // ratio pi_1 / pi_0 is not 1 if iteration 0 changed the weights; the untrained micro model often
  // scores every image alike (no advantage, no update), and then it is exactly 1. (That the ratio
  // is computed and clipped as specified is reuse_test's, with a reward that always has spread.)
  EXPECT_EQ(lines[2].at("rollouts_off_policy"), kRollouts);
  EXPECT_EQ(lines[2].at("rollout_staleness_max"), 1);
  if (lines[1].at("optimizer_steps").get<int>() > 0) {
    EXPECT_GT(lines[2].at("ratio_max_abs_log").get<double>(), 0.0);
  } else {
    EXPECT_EQ(lines[2].at("ratio_max_abs_log").get<double>(), 0.0);
  }
  const auto summary = Json::parse(std::ifstream(job.dir / "run" / "summary.json"));
  EXPECT_EQ(summary.at("reuse").at("setting"), "off_policy");
  EXPECT_EQ(summary.at("reuse").at("rollouts_sampled"), 0);
  EXPECT_EQ(job.trajectories_left(), 0u) << "unselected ones deleted at selection, the rest after";
}

TEST(ReuseModes, SyncStaleExploresWithThePreviousWeightsAcrossARestart) {
  constexpr int kIterations = 6;
  const auto dir = testing::make_temp_dir("spotlight-sync-stale");
  auto args = small_job(dir / "run", kIterations);
  args.insert(args.begin(), "train");
  args.insert(args.end(), {"--set", "exploration.mode=sync-stale"});
  const auto latest = dir / "run" / "checkpoints" / "latest";
  {
    Process first(testing::binary_path("services/trainer/spotlight-trainer"), args,
                  dir / "trainer-1.log");
    ASSERT_TRUE(spotlight::testing::wait_for(
        [&] { return std::filesystem::exists(latest) || !first.running(); }, 300s));
    ASSERT_TRUE(first.running()) << "finished before it could be killed\n" << first.log_tail();
    first.signal(SIGKILL);
    EXPECT_EQ(first.wait(30s), std::optional<int>(128 + SIGKILL));
  }
  Process second(testing::binary_path("services/trainer/spotlight-trainer"), args,
                 dir / "trainer-2.log");
  const auto status = second.wait(600s);
  ASSERT_EQ(status, std::optional<int>(0)) << second.log_tail();
  EXPECT_NE(second.log_tail(100000).find("resumed from checkpoint"), std::string::npos);
  EXPECT_EQ(second.log_tail(100000).find("explores with the current ones"), std::string::npos)
      << "the restarted trainer lost the previous iteration's weights";
  const auto lines = metric_lines(dir / "run");
  ASSERT_EQ(lines.size(), static_cast<size_t>(kIterations + 1));
  for (int k = 0; k < kIterations; ++k) {
    SCOPED_TRACE(lines[k + 1].dump());
    EXPECT_EQ(lines[k + 1].at("iteration"), k);
    EXPECT_EQ(lines[k + 1].at("explore_weights_version"), std::max(0, k - 1));
    // Only iteration 0 explores with the current weights, and on-policy reuse takes those.
    EXPECT_EQ(lines[k + 1].at("rollouts_reused"), k == 0 ? 8 : 0);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spotlight
