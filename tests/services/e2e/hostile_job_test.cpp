// The whole system as processes (as async_job_test) under issue #13.5's attacks, made by a client
// with write access to Redis but not the run's task key:
//  - poisoned results written into the results hash before the explorers finish those tasks
//    (garbage bytes, a well-formed result for another seed, a reward that is not a number): each
//    used to stall the trainer for the whole exploration.max_wait_seconds, and the explorers' real
//    results were discarded as duplicates;
//  - forged, well-formed tasks written straight into the task stream (3000 sampler steps,
//    unsigned; and a real task's fields with its signature, changed): one used to be run.
// Now: the poisoned results are quarantined and their tasks run again, the trainer does not wait
// out its deadline, every task ends with one valid result, the forged tasks are dead-lettered at
// their first delivery with the reason and never produce a result. And tasks deleted from the
// stream by hand are enqueued again by the planner instead of being waited for.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/queue/redis_lease_queue.hpp"
#include "common/redis/client.hpp"
#include "common/run/run_config.hpp"
#include "common/run/schedule.hpp"
#include "common/run/task_checks.hpp"
#include "common/wire/codec.hpp"
#include "common/wire/messages.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/wait_for.hpp"
#include "tools/cluster/cluster.hpp"

namespace spotlight {
namespace {

using namespace std::chrono_literals;

constexpr int kIterations = 4;
constexpr int kPrompts = 2;
constexpr int kCandidates = 6;
constexpr double kMaxWaitSeconds = 60;

// The local cluster (tools/cluster) of a small async job on the micro model: redis-server, the
// reward service, the planner, `explorers` explorers and the trainer.
cluster::ClusterOptions job(const std::filesystem::path& dir, const std::string& run_id,
                            int iterations, int max_wait_seconds, int explorers) {
  cluster::ClusterOptions o;
  o.bin_dir = testing::binary_path("services");
  o.redis_server = *testing::RedisServer::find_executable();
  o.redis_appendfsync = "always";
  o.explorers = explorers;
  o.run.overrides = {
      "run.id=" + run_id,
      "run.dir=" + (dir / "run").string(),
      "model.preset=micro",
      "exploration.mode=async",
      "exploration.candidates=" + std::to_string(kCandidates),
      "exploration.max_wait_seconds=" + std::to_string(max_wait_seconds),
      "trainer.iterations=" + std::to_string(iterations),
      "trainer.prompts_per_iteration=" + std::to_string(kPrompts),
      "trainer.group_size=4",
      "trainer.micro_batch=4",
      "sampler.steps=4",
      "validation.prompts=5",
      "validation.steps=3",
      "validation.every=10",
      "audit.every=0",
      "run.threads=1",
      "explorer.batch=4",
      "explorer.heartbeat_ms=200",
      "planner.poll_ms=50",
  };
  return o;
}

// Waits for the trainer, then for planner and explorers to exit 0 by themselves, then stops the
// reward service with SIGTERM (it must exit 0 within the grace period).
void expect_clean_end(cluster::Cluster& cluster, std::chrono::seconds trainer_timeout) {
  const auto trainer = cluster.process("trainer")->wait_for(trainer_timeout);
  ASSERT_TRUE(trainer.has_value()) << "trainer did not finish\n" << cluster.log_tail("trainer");
  ASSERT_TRUE(trainer->success()) << trainer->describe() << "\n" << cluster.log_tail("trainer");
  std::vector<std::string> names = {"planner"};
  for (int i = 1; cluster.process("explorer-" + std::to_string(i)) != nullptr; ++i)
    names.push_back("explorer-" + std::to_string(i));
  for (const auto& name : names) {
    const auto status = cluster.process(name)->wait_for(60s);
    ASSERT_TRUE(status.has_value()) << cluster.log_tail(name);
    EXPECT_TRUE(status->success()) << status->describe() << "\n" << cluster.log_tail(name);
  }
  const auto reward = cluster.process("reward")->terminate(30s);
  EXPECT_TRUE(reward.status.success() && !reward.escalated) << cluster.log_tail("reward");
}

TEST(HostileJob, PoisonedResultsAndForgedTasksNeitherStallNorRun) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  const auto dir = testing::make_temp_dir("spotlight-hostile");
  const std::string run_id = "hostile";
  const run::RunKeys keys(run_id);
  cluster::Cluster cluster(
      job(dir, run_id, kIterations, static_cast<int>(kMaxWaitSeconds), /*explorers=*/2));
  cluster.start_redis();  // alone: the poison is in place before any service runs
  redis::RedisOptions redis_options;
  redis_options.port = cluster.redis_port();

  // The attacker: plain write access to Redis.
  redis::RedisClient attacker(redis_options);
  const std::string results = keys.explore_queue + ":results";
  const std::string stream = keys.explore_queue + ":tasks";
  wire::SeedResult wrong_seed;
  wrong_seed.task_id = run::seed_task_id(2, 1, 3);
  wrong_seed.run_id = run_id;
  wrong_seed.iteration = 2;
  wrong_seed.prompt_index = 1;
  wrong_seed.seed = 12345;
  wrong_seed.reward = 1.0;
  wire::SeedResult nan_reward = wrong_seed;
  nan_reward.task_id = run::seed_task_id(3, 0, 1);
  nan_reward.iteration = 3;
  nan_reward.prompt_index = 0;
  nan_reward.seed = run::candidate_seed(0, 3, 0, 1);
  nan_reward.reward = std::numeric_limits<double>::quiet_NaN();
  const std::map<std::string, std::string> poison = {
      {run::seed_task_id(2, 0, 0), "garbage, not msgpack"},
      {run::seed_task_id(2, 1, 3), wrong_seed.encode()},
      {run::seed_task_id(3, 0, 1), nan_reward.encode()},
  };
  for (const auto& [id, bytes] : poison)
    attacker.command({"HSET", results, id, bytes});

  cluster.start();

  // Forged tasks, once a real one shows what tasks look like.
  std::string real_payload;
  ASSERT_TRUE(testing::wait_for(
      [&] {
        const auto r = attacker.command({"XRANGE", stream, "-", "+", "COUNT", "1"});
        if (r.as_array().empty()) return false;
        const auto& fields = r.as_array()[0].as_array()[1].as_array();
        for (std::size_t i = 0; i + 1 < fields.size(); i += 2) {
          if (fields[i].as_string() == "payload") real_payload = fields[i + 1].as_string();
        }
        return !real_payload.empty();
      },
      120s))
      << cluster.log_tail("planner");
  // Written as an attacker who knows nothing of signatures would: a version 1 task, 3000 steps.
  const wire::SeedTask real = wire::SeedTask::decode(real_payload);
  const std::string unsigned_task = wire::Writer("seed_task", 1)
                                        .str("run_id", real.run_id)
                                        .i64("iteration", 1)
                                        .i64("prompt_index", 0)
                                        .str("prompt_text", real.prompt_text)
                                        .u64("seed", real.seed)
                                        .i64("weights_version", 0)
                                        .i64("sampler_steps", 3000)
                                        .i64("deadline_unix_ms", 0)
                                        .i64("attempt", 0)
                                        .finish();
  wire::SeedTask altered = wire::SeedTask::decode(real_payload);  // keeps the real signature
  altered.sampler_steps = 3000;
  attacker.command({"XADD", stream, "*", "task", "i1/p0/c99", "payload", unsigned_task});
  attacker.command({"XADD", stream, "*", "task", "i1/p1/c98", "payload", altered.encode()});

  expect_clean_end(cluster, 900s);
  if (HasFatalFailure()) return;

  // No iteration waited out its deadline for a result that was never coming.
  std::ifstream metrics(dir / "run" / "metrics.jsonl");
  int iterations = 0, fallbacks = 0;
  for (std::string line; std::getline(metrics, line);) {
    const auto m = nlohmann::json::parse(line);
    if (m.at("iteration").get<int>() < 0) continue;
    ++iterations;
    fallbacks += m.value("fallback_prompts", 0);
    std::cout << "iteration " << m.at("iteration") << ": " << m.value("iteration_seconds", -1.0)
              << " s, waiting for explored seeds " << m.at("explore_seconds") << " s\n";
    EXPECT_LT(m.at("explore_seconds").get<double>(), kMaxWaitSeconds / 2)
        << "iteration " << m.at("iteration") << " stalled\n"
        << cluster.log_tail("trainer");
  }
  EXPECT_EQ(iterations, kIterations);
  EXPECT_EQ(fallbacks, 0);

  // Every scheduled task ends with one valid result; the poison is in quarantine, counted.
  queue::LeaseQueueOptions queue_options;
  queue_options.key_prefix = keys.explore_queue;
  queue::RedisLeaseQueue queue(redis_options, queue_options);
  for (int k = 0; k < kIterations; ++k) {
    for (int i = 0; i < kPrompts; ++i) {
      for (int j = 0; j < kCandidates; ++j) {
        const auto id = run::seed_task_id(k, i, j);
        const auto bytes = queue.result(id);
        ASSERT_TRUE(bytes.has_value()) << id;
        const auto checked = run::check_result(
            *bytes, run::ExpectedResult{id, run_id, k, i, run::candidate_seed(0, k, i, j)});
        EXPECT_TRUE(checked.result.has_value()) << id << ": " << checked.problem;
      }
    }
  }
  const auto stats = queue.stats();
  std::cout << "queue: quarantined " << stats.quarantined_total << ", requeued "
            << stats.requeued_total << ", dead letters " << stats.dead_letters << ", duplicates "
            << stats.duplicate_results_total << "\n";
  EXPECT_EQ(stats.quarantined_total, static_cast<std::int64_t>(poison.size()));
  // A task still waiting or leased when its poison is found is not enqueued again: its holder
  // records the real result.
  EXPECT_LE(stats.requeued_total, stats.quarantined_total);
  std::set<std::string> quarantined;
  for (const auto& q : queue.quarantined(10)) {
    quarantined.insert(q.task_id);
    EXPECT_FALSE(q.reason.empty());
  }
  EXPECT_EQ(quarantined.size(), poison.size());
  const auto summary = nlohmann::json::parse(std::ifstream(dir / "run" / "summary.json"));
  EXPECT_EQ(summary.at("queue").value("quarantined_total", -1), static_cast<int>(poison.size()));

  // The forged tasks were never run: dead-lettered at their first delivery, no result.
  std::map<std::string, queue::DeadLetter> dead;
  for (auto& d : queue.dead_letters(10))
    dead[d.task_id] = d;
  EXPECT_EQ(dead.size(), 2u);
  EXPECT_NE(dead["i1/p0/c99"].error.find("unsigned"), std::string::npos) << dead["i1/p0/c99"].error;
  EXPECT_NE(dead["i1/p1/c98"].error.find("bad_signature"), std::string::npos)
      << dead["i1/p1/c98"].error;
  for (const auto& [id, d] : dead) {
    std::cout << "dead letter " << id << " after " << d.deliveries << " deliveries: " << d.error
              << "\n";
    EXPECT_EQ(d.deliveries, 1) << id;
    EXPECT_FALSE(queue.result(id).has_value()) << id;
  }
  std::filesystem::remove_all(dir);
}

// A client with the stream owner's credentials (hostile, or a buggy build) deletes every task of
// iteration 2 the moment the planner enqueues them. Deleted entries are never delivered again: the
// trainer used to wait its whole deadline for them ("N of 12 explored seeds missing at the
// deadline") and train iteration 2 on fallback seeds. The planner's reconciliation enqueues them
// again within a heartbeat: no iteration waits its deadline and every task ends with a result.
TEST(HostileJob, TasksDeletedFromTheQueueAreEnqueuedAgainInsteadOfWaitedFor) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  const auto dir = testing::make_temp_dir("spotlight-vanish");
  const std::string run_id = "vanish";
  const run::RunKeys keys(run_id);
  cluster::Cluster cluster(
      job(dir, run_id, kIterations, static_cast<int>(kMaxWaitSeconds), /*explorers=*/1));
  cluster.start();
  redis::RedisOptions redis_options;
  redis_options.port = cluster.redis_port();
  redis::RedisClient rogue(redis_options);
  const std::string stream = keys.explore_queue + ":tasks";
  int deleted = 0;
  ASSERT_TRUE(testing::wait_for(
      [&] {
        const auto r = rogue.command({"XRANGE", stream, "-", "+"});
        for (const auto& entry : r.as_array()) {
          const auto& fields = entry.as_array()[1].as_array();
          for (std::size_t i = 0; i + 1 < fields.size(); i += 2) {
            if (fields[i].as_string() != "task" || fields[i + 1].as_string().rfind("i2/", 0) != 0)
              continue;
            deleted += static_cast<int>(
                rogue.command({"XDEL", stream, entry.as_array()[0].as_string()}).as_integer());
          }
        }
        return deleted > 0;
      },
      300s))
      << cluster.log_tail("planner");
  std::cout << "deleted " << deleted << " of iteration 2's " << kPrompts * kCandidates
            << " tasks from the stream\n";

  expect_clean_end(cluster, 900s);
  if (HasFatalFailure()) return;
  std::ifstream metrics(dir / "run" / "metrics.jsonl");
  int iterations = 0, fallbacks = 0;
  for (std::string line; std::getline(metrics, line);) {
    const auto m = nlohmann::json::parse(line);
    if (m.at("iteration").get<int>() < 0) continue;
    ++iterations;
    fallbacks += m.value("fallback_prompts", 0);
    std::cout << "iteration " << m.at("iteration") << ": " << m.value("iteration_seconds", -1.0)
              << " s, waiting for explored seeds " << m.at("explore_seconds") << " s\n";
    EXPECT_LT(m.at("explore_seconds").get<double>(), kMaxWaitSeconds / 2)
        << "iteration " << m.at("iteration") << " stalled\n"
        << cluster.log_tail("trainer");
  }
  EXPECT_EQ(iterations, kIterations);
  EXPECT_EQ(fallbacks, 0);
  queue::LeaseQueueOptions queue_options;
  queue_options.key_prefix = keys.explore_queue;
  queue::RedisLeaseQueue queue(redis_options, queue_options);
  for (int k = 0; k < kIterations; ++k) {
    for (int i = 0; i < kPrompts; ++i) {
      for (int j = 0; j < kCandidates; ++j) {
        const auto id = run::seed_task_id(k, i, j);
        EXPECT_TRUE(queue.result(id).has_value()) << id;
      }
    }
  }
  const auto stats = queue.stats();
  std::cout << "queue: reconciled " << stats.reconciled_total << ", acked " << stats.acked_total
            << ", results " << stats.results << "\n";
  EXPECT_GE(stats.reconciled_total, 1);
  EXPECT_LE(stats.reconciled_total, deleted);
  std::ifstream planner_log(dir / "run" / "logs" / "planner.log");
  for (std::string line; std::getline(planner_log, line);) {
    if (line.find("reconciliation") != std::string::npos) std::cout << line << "\n";
  }
  std::filesystem::remove_all(dir);
}

// deploy/redis/users.acl is enough for the real services: the whole job runs with each process
// logged in as its role (the default user off), and finishes with every task's result.
TEST(HostileJob, TheJobRunsWithEachServiceLoggedInAsItsRole) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  const char* source = std::getenv("SPOTLIGHT_SOURCE_DIR");
  std::ifstream in(std::filesystem::path(source ? source : ".") / "deploy/redis/users.acl");
  std::stringstream text;
  text << in.rdbuf();
  std::string acl = text.str();
  ASSERT_NE(acl.find("user explorer"), std::string::npos) << "users.acl not found";
  const auto password = [](const std::string& role) { return "e2e-" + role + "-password"; };
  for (const std::string role : {"admin", "planner", "trainer", "explorer"}) {
    const std::string from = ">change-me-" + role;
    acl.replace(acl.find(from), from.size(), ">" + password(role));
  }
  const auto dir = testing::make_temp_dir("spotlight-acl-job");
  std::ofstream(dir / "users.acl") << acl;
  const std::string run_id = "acl";
  cluster::ClusterOptions o = job(dir, run_id, 2, 120, /*explorers=*/1);
  o.redis_args = {"--aclfile", (dir / "users.acl").string()};
  o.redis_user = "admin";  // the readiness probe and this test
  o.redis_password = password("admin");
  for (const std::string role : {"planner", "trainer", "explorer"}) {
    o.role_env[role] = {{"SPOTLIGHT_REDIS_USER", role},
                        {"SPOTLIGHT_REDIS_PASSWORD", password(role)}};
  }
  cluster::Cluster cluster(o);
  cluster.start();
  expect_clean_end(cluster, 600s);
  if (HasFatalFailure()) return;
  redis::RedisOptions redis_options;
  redis_options.port = cluster.redis_port();
  redis_options.user = "admin";
  redis_options.password = password("admin");
  queue::LeaseQueueOptions queue_options;
  queue_options.key_prefix = run::RunKeys(run_id).explore_queue;
  queue::RedisLeaseQueue queue(redis_options, queue_options);
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i < kPrompts; ++i) {
      for (int j = 0; j < kCandidates; ++j) {
        const auto id = run::seed_task_id(k, i, j);
        const auto bytes = queue.result(id);
        ASSERT_TRUE(bytes.has_value()) << id << "\n" << cluster.log_tail("explorer-1");
        EXPECT_TRUE(run::check_result(*bytes, run::ExpectedResult{id, run_id, k, i,
                                                                  run::candidate_seed(0, k, i, j)})
                        .result.has_value())
            << id;
      }
    }
  }
  EXPECT_EQ(queue.stats().dead_letters, 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spotlight
