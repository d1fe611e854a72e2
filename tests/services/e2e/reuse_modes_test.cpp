// The benchmark's baselines of issue #14 as processes, on the micro model:
//  - offload: the planner enqueues iteration k's rollouts (G seeds per prompt) once v_k is
//    published, an explorer samples them with exactly v_k and keeps their trajectories, the
//    trainer trains on them without sampling and is idle (accounted) while it waits;
//  - sync-stale: the trainer explores with the previous iteration's weights, also across a
//    SIGKILL and restart (the weights travel in the checkpoint).
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include "common/queue/redis_lease_queue.hpp"
#include "common/redis/client.hpp"
#include "common/run/run_config.hpp"
#include "common/run/schedule.hpp"
#include "common/wire/messages.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/wait_for.hpp"
#include "tools/cluster/cluster.hpp"

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

// The settings of a small job (key=value).
std::vector<std::string> small_job(const std::filesystem::path& run_dir, int iterations) {
  return {"run.dir=" + run_dir.string(),
          "model.preset=micro",
          "trainer.iterations=" + std::to_string(iterations),
          "trainer.prompts_per_iteration=2",
          "trainer.group_size=4",
          "trainer.micro_batch=4",
          "exploration.candidates=6",
          "sampler.steps=4",
          "validation.prompts=5",
          "validation.steps=3",
          "validation.every=100",
          "audit.every=0",
          "run.threads=1"};
}

// The local cluster (tools/cluster) of a small job in `mode` with `extra` settings: redis-server,
// the reward service, the planner, one explorer and the trainer, run to the end. Every process
// must exit 0; Redis runs until the job is destroyed.
struct ServicesJob {
  ServicesJob(const std::string& mode, const std::vector<std::string>& extra, int iterations)
      : dir(testing::make_temp_dir("spotlight-" + mode)),
        run_id(mode),
        cluster(options(dir, mode, extra, iterations)) {
    cluster.start();
    const auto status = cluster.process("trainer")->wait_for(600s);
    EXPECT_TRUE(status.has_value()) << "trainer did not finish\n" << cluster.log_tail("trainer");
    EXPECT_TRUE(status && status->success()) << cluster.log_tail("trainer");
    for (const char* name : {"planner", "explorer-1"}) {
      const auto s = cluster.process(name)->wait_for(60s);
      EXPECT_TRUE(s.has_value()) << "still running after the trainer finished\n"
                                 << cluster.log_tail(name);
      EXPECT_TRUE(s && s->success()) << cluster.log_tail(name);
    }
    const auto reward = cluster.process("reward")->terminate(30s);
    EXPECT_TRUE(reward.status.success() && !reward.escalated) << cluster.log_tail("reward");
  }
  ~ServicesJob() {
    cluster.stop();
    if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
  }
  redis::RedisOptions redis_options() const {
    redis::RedisOptions o;
    o.port = cluster.redis_port();
    return o;
  }
  // Trajectory keys left in Redis.
  size_t trajectories_left() {
    redis::RedisClient client(redis_options());
    return client.command({"KEYS", run::RunKeys(run_id).trajectories + ":*"}).as_array().size();
  }

  std::filesystem::path dir;
  std::string run_id;
  cluster::Cluster cluster;

 private:
  static cluster::ClusterOptions options(const std::filesystem::path& dir, const std::string& mode,
                                         const std::vector<std::string>& extra, int iterations) {
    cluster::ClusterOptions o;
    o.bin_dir = testing::binary_path("services");
    o.redis_server = *testing::RedisServer::find_executable();
    o.explorers = 1;
    o.run.overrides = small_job(dir / "run", iterations);
    for (const std::string& s :
         {"run.id=" + mode, "exploration.mode=" + mode,
          std::string("exploration.max_wait_seconds=120"), std::string("explorer.batch=4"),
          std::string("explorer.heartbeat_ms=200"), std::string("planner.poll_ms=20")})
      o.run.overrides.push_back(s);
    o.run.overrides.insert(o.run.overrides.end(), extra.begin(), extra.end());
    return o;
  }
};

TEST(ReuseModes, OffloadTrainsOnTheExplorersRolloutsOfTheCurrentWeights) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  constexpr int kIterations = 3, kPrompts = 2, kGroup = 4;
  ServicesJob job("offload", {}, kIterations);
  ASSERT_FALSE(::testing::Test::HasFailure());
  const auto& dir = job.dir;
  const auto& run_id = job.run_id;

  // Exactly the rollouts were enqueued (G per prompt, no more) and sampled with exactly v_k.
  queue::LeaseQueueOptions queue_options;
  queue_options.key_prefix = run::RunKeys(run_id).explore_queue;
  queue::RedisLeaseQueue queue(job.redis_options(), queue_options);
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
  std::vector<std::string> args = {"train"};
  for (const auto& s : small_job(dir / "run", kIterations))
    args.insert(args.end(), {"--set", s});
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
