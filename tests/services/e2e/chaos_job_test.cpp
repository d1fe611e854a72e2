// Issue #4, the chaos test: the whole system as processes, started by the local-cluster launcher
// (redis-server with AOF, reward, planner, trainer in exploration.mode=async) while spotlight-chaos
// replays a real spot availability trace (time-scaled) by starting explorers and preempting them
// with SIGTERM (+ grace: in-flight commits) and SIGKILL (leases come back through the planner's
// reaper or expiry). On top, the trainer and the planner are SIGKILLed once each mid-run and
// restarted, and Redis is SIGKILLed and restarted from its AOF once. The job must finish with:
//   - every task of every iteration with exactly one result, each acknowledged exactly once;
//   - every result acknowledged before the Redis kill still there, byte for byte, after it;
//   - the trainer's iterations an unbroken sequence (-1 = base validation, 0..K-1, each once);
//   - nothing leased or dead-lettered at the end, and every explored prompt served;
//   - the validation score (GenEval overall, strict accuracy on held-out prompts) at the end higher
//     than the base model's.
// For the last check the test pretrains its own base first: the `mini` preset on the
// single-object category only (600 steps, about 30 s of one core), which already follows 60% of
// the 256 held-out prompts (0.602). With run.seed 0 (fixed here) 10 GRPO iterations at lr 1e-4
// raise that to 0.672, the same in every run on one machine (the async job is deterministic in
// what it trains on). The recipe is not robust to the seed: this job with run.seed 1 and 2 gave
// 0.727 and 0.566 (20 iterations: 0.715, 0.563; lr 2e-4 x 20: 0.613, 0.523, 0.684; 4 prompts per
// iteration: 0.656, 0.703, 0.586), so on another machine's numerics this check can fail; the
// scores are printed. The micro preset cannot be used: its base scores 0 and RL does not move it.
#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include "common/queue/redis_lease_queue.hpp"
#include "common/redis/client.hpp"
#include "common/run/run_config.hpp"
#include "common/run/schedule.hpp"
#include "common/store/redis_key_value_store.hpp"
#include "common/wire/messages.hpp"
#include "tests/services/e2e/queue_results.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/wait_for.hpp"
#include "tools/cluster/cluster.hpp"

namespace spotlight {
namespace {

using namespace std::chrono_literals;
using testing::Process;
using testing::wait_for;

constexpr int kIterations = 10;
constexpr int kPrompts = 2;
constexpr int kCandidates = 8;
constexpr auto kJobTimeout = 600s;
constexpr auto kPretrainTimeout = 600s;

// The validation report of one metrics.jsonl line, if it has one.
std::optional<nlohmann::json> validation_of(const nlohmann::json& line) {
  const auto it = line.find("validation");
  if (it == line.end() || it->is_null()) return std::nullopt;
  return *it;
}

std::size_t lines_of(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);)
    n += line.empty() ? 0 : 1;
  return n;
}

TEST(ChaosJob, PreemptionsAndCrashesLoseNothingAndCountNothingTwice) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  const char* source = std::getenv("SPOTLIGHT_SOURCE_DIR");
  if (source == nullptr) GTEST_SKIP() << "SPOTLIGHT_SOURCE_DIR is not set (run through ctest)";
  const auto trace = std::filesystem::path(source) / "deploy/traces" /
                     "availability_16-node_aws-08-27-2023_us-west-2a_v100_1.json";
  const auto dir = testing::make_temp_dir("spotlight-chaos");
  const std::string run_id = "chaos";
  // The base: `mini` pretrained on single objects (the only category of this run), deterministic
  // for a given machine (fixed data and init seeds, one thread).
  const auto base = dir / "base.safetensors";
  const std::vector<std::string> model_args{
      "model.preset=mini",      "task.category_weights=[1,0,0,0,0]",
      "validation.prompts=256", "validation.steps=8",
      "run.threads=1",
  };
  {
    std::vector<std::string> args{"pretrain"};
    for (const auto& a : model_args)
      args.insert(args.end(), {"--set", a});
    for (const std::string a :
         {"pretrain.category_weights=[1,0,0,0,0]", "pretrain.steps=600", "pretrain.batch=32",
          "pretrain.lr=3e-3", "pretrain.warmup=20", "pretrain.seed=1"}) {
      args.insert(args.end(), {"--set", a});
    }
    args.insert(args.end(), {"--set", "run.dir=" + (dir / "pretrain").string(), "--set",
                             "pretrain.output=" + base.string()});
    Process pretrain(testing::binary_path("services/trainer/spotlight-trainer"), args,
                     dir / "pretrain.log");
    ASSERT_EQ(pretrain.wait(kPretrainTimeout), std::optional<int>(0)) << pretrain.log_tail();
  }
  // The local cluster: redis-server (AOF, appendfsync always), reward, planner and the trainer;
  // the explorers come from the preemption driver added below.
  cluster::ClusterOptions o;
  o.bin_dir = testing::binary_path("services");
  o.explorers = 0;
  o.redis_appendfsync = "always";  // what was acknowledged survives the kill
  o.run.overrides = {
      "run.id=" + run_id,
      "run.dir=" + (dir / "run").string(),
      "model.base=" + base.string(),
      "trainer.lr=1e-4",
      "exploration.mode=async",
      "exploration.candidates=" + std::to_string(kCandidates),
      "exploration.max_wait_seconds=300",
      "exploration.lease_timeout_ms=5000",
      "exploration.max_deliveries=50",
      "trainer.iterations=" + std::to_string(kIterations),
      "trainer.prompts_per_iteration=" + std::to_string(kPrompts),
      "trainer.group_size=4",
      "trainer.micro_batch=4",
      "sampler.steps=8",
      "validation.every=5",
      "audit.every=5",
      "audit.prompts=1",
      "explorer.batch=4",
      "explorer.heartbeat_ms=200",
      "explorer.grace_seconds=5",
      "planner.poll_ms=50",
  };
  o.run.overrides.insert(o.run.overrides.end(), model_args.begin(), model_args.end());
  cluster::Cluster cluster(o);
  cluster.start();
  const auto kill = [&](const std::string& name) {
    cluster.process(name)->signal(SIGKILL);
    const auto s = cluster.process(name)->wait_for(30s);
    return s ? s->shell_code() : -1;
  };

  // Explorers come and go with the trace: 4 at its peak, at least 1, a tick every 0.5 s, from a
  // stretch of the trace with bursts of 3 (seed 1: the first burst has both SIGTERM and SIGKILL).
  std::vector<std::string> chaos_args{
      testing::binary_path("tools/chaos/spotlight-chaos").string(),
      "--trace",
      trace.string(),
      "--time-scale",
      "600",
      "--max-explorers",
      "4",
      "--min-explorers",
      "1",
      "--kill-ratio",
      "0.5",
      "--seed",
      "1",
      "--start-tick",
      "4599",
      "--loop",
      "--grace-seconds",
      "5",
      "--events",
      (dir / "chaos-events.jsonl").string(),
      "--summary",
      (dir / "chaos-summary.json").string(),
      "--log-dir",
      (dir / "explorers").string(),
      "--",
      testing::binary_path("services/explorer/spotlight-explorer").string()};
  for (const auto& a : cluster.service_args())
    chaos_args.push_back(a);
  chaos_args.insert(chaos_args.end(), {"--set", "explorer.id=chaos-{n}"});
  process::Process& chaos = cluster.add("chaos", "chaos", chaos_args);

  const auto metrics = dir / "run" / "metrics.jsonl";
  const auto progressed = [&](std::size_t lines) {
    return wait_for(
        [&] { return lines_of(metrics) >= lines || !cluster.process("trainer")->running(); },
        kJobTimeout);
  };
  // 1. The trainer, SIGKILLed after two iterations (mid-way through the third), restarted.
  ASSERT_TRUE(progressed(3));
  ASSERT_TRUE(cluster.process("trainer")->running()) << cluster.log_tail("trainer");
  ASSERT_EQ(kill("trainer"), 128 + SIGKILL);
  cluster.restart("trainer");
  // 2. The planner, SIGKILLed and restarted.
  ASSERT_EQ(kill("planner"), 128 + SIGKILL);
  cluster.restart("planner");

  // 3. Redis, SIGKILLed and restarted from its AOF, with the results acknowledged so far noted.
  ASSERT_TRUE(progressed(6));
  redis::RedisOptions redis_options;
  redis_options.port = cluster.redis_port();
  queue::LeaseQueueOptions queue_options;
  queue_options.key_prefix = run::RunKeys(run_id).explore_queue;
  const auto acknowledged = testing::queue_results(redis_options, queue_options);
  ASSERT_FALSE(acknowledged.empty());
  ASSERT_EQ(kill("redis"), 128 + SIGKILL);
  cluster.restart("redis");  // on its port, from its AOF; returns once it answers PING
  // The services ride out the outage (they back off and reconnect); should the trainer exit, a
  // supervisor (here the test) restarts it and it resumes from its checkpoint.
  int trainer_restarts = 0;
  std::optional<process::ExitStatus> trainer_status;
  for (;;) {
    trainer_status = cluster.process("trainer")->wait_for(kJobTimeout);
    ASSERT_TRUE(trainer_status.has_value()) << "trainer did not finish\n"
                                            << cluster.log_tail("trainer");
    if (trainer_status->success() || trainer_restarts >= 3) break;
    ++trainer_restarts;
    cluster.restart("trainer");
  }
  ASSERT_TRUE(trainer_status->success()) << cluster.log_tail("trainer");

  // The planner stops by itself; the driver stops when an explorer finishes by itself.
  const auto planner_status = cluster.process("planner")->wait_for(60s);
  ASSERT_TRUE(planner_status.has_value()) << cluster.log_tail("planner");
  EXPECT_TRUE(planner_status->success()) << cluster.log_tail("planner");
  auto chaos_status = chaos.wait_for(60s);
  if (!chaos_status) chaos_status = chaos.terminate(60s).status;
  ASSERT_TRUE(chaos_status->success()) << cluster.log_tail("chaos");
  const auto reward = cluster.process("reward")->terminate(30s);
  EXPECT_TRUE(reward.status.success() && !reward.escalated) << cluster.log_tail("reward");

  // Preemptions of both kinds happened; every SIGTERM'd explorer exited 0 within its grace.
  const auto summary = nlohmann::json::parse(std::ifstream(dir / "chaos-summary.json"));
  std::cout << "[ info     ] chaos: " << summary.dump() << ", trainer restarts after the Redis "
            << "kill: " << trainer_restarts << "\n";
  EXPECT_GE(summary.at("terms").get<int>(), 1);
  EXPECT_GE(summary.at("kills").get<int>(), 1);
  EXPECT_EQ(summary.at("escalated").get<int>(), 0);
  EXPECT_EQ(summary.at("failed_exits").get<int>(), 0);

  // Exactly one result per scheduled task, each acknowledged once; nothing leased or dead.
  queue::RedisLeaseQueue queue(redis_options, queue_options);
  const auto stats = queue.stats();
  EXPECT_EQ(stats.leased, 0);
  EXPECT_EQ(stats.dead_letters, 0);
  EXPECT_EQ(stats.results, stats.acked_total) << "a result without its acknowledgement or reverse";
  EXPECT_EQ(stats.results, kIterations * kPrompts * kCandidates);
  for (int k = 0; k < kIterations; ++k) {
    for (int i = 0; i < kPrompts; ++i) {
      for (int j = 0; j < kCandidates; ++j) {
        const auto id = run::seed_task_id(k, i, j);
        const auto bytes = queue.result(id);
        ASSERT_TRUE(bytes.has_value()) << id << " has no result";
        const auto result = wire::SeedResult::decode(*bytes);
        EXPECT_EQ(result.task_id, id);
        EXPECT_EQ(result.seed, run::candidate_seed(0, k, i, j)) << id;
      }
    }
  }
  // Nothing acknowledged before the Redis kill was lost or changed.
  for (const auto& [id, bytes] : acknowledged)
    EXPECT_EQ(queue.result(id), std::optional<std::string>(bytes)) << id;

  // The trainer's iterations: base validation, then 0..K-1, each exactly once, no fallback.
  std::ifstream lines(metrics);
  std::vector<int64_t> iterations;
  int fallbacks = 0;
  std::optional<nlohmann::json> first_validation, last_validation;
  for (std::string line; std::getline(lines, line);) {
    const auto m = nlohmann::json::parse(line);
    iterations.push_back(m.at("iteration").get<int64_t>());
    fallbacks += m.value("fallback_prompts", 0);
    if (auto v = validation_of(m)) {
      if (!first_validation) first_validation = v;
      last_validation = v;
    }
  }
  std::vector<int64_t> expected{-1};
  for (int k = 0; k < kIterations; ++k)
    expected.push_back(k);
  EXPECT_EQ(iterations, expected);
  EXPECT_EQ(fallbacks, 0);

  // The validation score rose: the base's (iteration -1) against the last iteration's.
  ASSERT_TRUE(first_validation.has_value());
  ASSERT_TRUE(last_validation.has_value());
  const double before = first_validation->at("geneval_score").get<double>();
  const double after = last_validation->at("geneval_score").get<double>();
  std::cout << "[ info     ] validation geneval " << before << " -> " << after << ", mean reward "
            << first_validation->at("mean_reward").get<double>() << " -> "
            << last_validation->at("mean_reward").get<double>() << "\n";
  EXPECT_GT(after, before) << "post-training under chaos did not raise the validation score";

  // Work accounting of the explorers (informational: how much the commits saved).
  store::RedisKeyValueStore kv(redis_options, run::RunKeys(run_id).prefix);
  std::cout << "[ info     ] sampler steps computed "
            << kv.counter(run::RunKeys(run_id).sample_steps) << " for "
            << kIterations * kPrompts * kCandidates * 8 << " needed; resumed "
            << kv.counter(run::RunKeys(run_id).resumed_steps) << " committed steps; duplicate runs "
            << stats.duplicate_results_total << "\n";
  cluster.stop();
  if (!::testing::Test::HasFailure() && std::getenv("SPOTLIGHT_KEEP_TEST_DIR") == nullptr) {
    std::filesystem::remove_all(dir);
  }
}

}  // namespace
}  // namespace spotlight
