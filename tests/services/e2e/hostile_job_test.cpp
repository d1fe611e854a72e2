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
// their first delivery with the reason and never produce a result.
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
#include <signal.h>

#include "common/queue/redis_lease_queue.hpp"
#include "common/redis/client.hpp"
#include "common/run/run_config.hpp"
#include "common/run/schedule.hpp"
#include "common/run/task_checks.hpp"
#include "common/wire/codec.hpp"
#include "common/wire/messages.hpp"
#include "tests/common/process/process.hpp"
#include "tests/common/redis/redis_server.hpp"
#include "tests/common/redis/wait_for.hpp"

namespace spotlight {
namespace {

using namespace std::chrono_literals;
using testing::Process;

constexpr int kIterations = 4;
constexpr int kPrompts = 2;
constexpr int kCandidates = 6;
constexpr double kMaxWaitSeconds = 60;

TEST(HostileJob, PoisonedResultsAndForgedTasksNeitherStallNorRun) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  testing::RedisServer redis;
  const auto dir = testing::make_temp_dir("spotlight-hostile");
  const std::string run_id = "hostile";
  const run::RunKeys keys(run_id);
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
      "--set", "exploration.max_wait_seconds=" + std::to_string(static_cast<int>(kMaxWaitSeconds)),
      "--set", "trainer.iterations=" + std::to_string(kIterations),
      "--set", "trainer.prompts_per_iteration=" + std::to_string(kPrompts),
      "--set", "trainer.group_size=4",
      "--set", "trainer.micro_batch=4",
      "--set", "sampler.steps=4",
      "--set", "validation.prompts=5",
      "--set", "validation.steps=3",
      "--set", "validation.every=10",
      "--set", "audit.every=0",
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

  // The attacker: plain write access to Redis.
  redis::RedisClient attacker(redis.client_options());
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
      << planner.log_tail();
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

  const auto trainer_status = trainer.wait(900s);
  ASSERT_TRUE(trainer_status.has_value()) << "trainer did not finish\n" << trainer.log_tail();
  ASSERT_EQ(*trainer_status, 0) << trainer.log_tail();
  for (auto* p : {&planner, &explorer1, &explorer2}) {
    const auto status = p->wait(60s);
    ASSERT_TRUE(status.has_value()) << p->log_tail();
    EXPECT_EQ(*status, 0) << p->log_tail();
  }
  reward.signal(SIGTERM);
  EXPECT_EQ(reward.wait(30s), std::optional<int>(0)) << reward.log_tail();

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
        << trainer.log_tail();
  }
  EXPECT_EQ(iterations, kIterations);
  EXPECT_EQ(fallbacks, 0);

  // Every scheduled task ends with one valid result; the poison is in quarantine, counted.
  queue::LeaseQueueOptions queue_options;
  queue_options.key_prefix = keys.explore_queue;
  queue::RedisLeaseQueue queue(redis.client_options(), queue_options);
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
  testing::RedisServerOptions redis_options;
  redis_options.user = "admin";
  redis_options.password = password("admin");
  redis_options.extra_args = {"--aclfile", (dir / "users.acl").string()};
  testing::RedisServer redis(redis_options);

  const std::string run_id = "acl";
  const int reward_port = testing::free_port();
  const std::vector<std::string> args{
      "--set", "run.id=" + run_id,
      "--set", "run.dir=" + (dir / "run").string(),
      "--set", "redis.port=" + std::to_string(redis.port()),
      "--set", "reward.endpoint=tcp://127.0.0.1:" + std::to_string(reward_port),
      "--set", "bus.trainer_endpoint=tcp://127.0.0.1:" + std::to_string(testing::free_port()),
      "--set", "model.preset=micro",
      "--set", "exploration.mode=async",
      "--set", "exploration.candidates=" + std::to_string(kCandidates),
      "--set", "exploration.max_wait_seconds=120",
      "--set", "trainer.iterations=2",
      "--set", "trainer.prompts_per_iteration=" + std::to_string(kPrompts),
      "--set", "trainer.group_size=4",
      "--set", "trainer.micro_batch=4",
      "--set", "sampler.steps=4",
      "--set", "validation.prompts=5",
      "--set", "validation.steps=3",
      "--set", "validation.every=10",
      "--set", "audit.every=0",
      "--set", "run.threads=1",
      "--set", "explorer.batch=4",
      "--set", "explorer.heartbeat_ms=200",
      "--set", "planner.poll_ms=50",
  };
  // The environment of a process is copied when it starts: set each role's credentials first.
  const auto as = [&](const std::string& role) {
    ::setenv("SPOTLIGHT_REDIS_USER", role.c_str(), 1);
    ::setenv("SPOTLIGHT_REDIS_PASSWORD", password(role).c_str(), 1);
  };
  Process reward(testing::binary_path("services/reward/spotlight-reward"),
                 {"--set", "reward.bind=tcp://127.0.0.1:" + std::to_string(reward_port)},
                 dir / "reward.log");
  as("planner");
  Process planner(testing::binary_path("services/planner/spotlight-planner"), args,
                  dir / "planner.log");
  as("explorer");
  auto explorer_args = args;
  explorer_args.insert(explorer_args.end(), {"--set", "explorer.id=e1"});
  Process explorer(testing::binary_path("services/explorer/spotlight-explorer"), explorer_args,
                   dir / "explorer.log");
  as("trainer");
  auto trainer_args = args;
  trainer_args.push_back("train");
  Process trainer(testing::binary_path("services/trainer/spotlight-trainer"), trainer_args,
                  dir / "trainer.log");
  ::unsetenv("SPOTLIGHT_REDIS_USER");
  ::unsetenv("SPOTLIGHT_REDIS_PASSWORD");

  const auto trainer_status = trainer.wait(600s);
  ASSERT_TRUE(trainer_status.has_value()) << trainer.log_tail();
  EXPECT_EQ(*trainer_status, 0) << trainer.log_tail();
  for (auto* p : {&planner, &explorer}) {
    const auto status = p->wait(60s);
    ASSERT_TRUE(status.has_value()) << p->log_tail();
    EXPECT_EQ(*status, 0) << p->log_tail();
  }
  reward.signal(SIGTERM);
  EXPECT_EQ(reward.wait(30s), std::optional<int>(0)) << reward.log_tail();
  queue::LeaseQueueOptions queue_options;
  queue_options.key_prefix = run::RunKeys(run_id).explore_queue;
  queue::RedisLeaseQueue queue(redis.client_options(), queue_options);
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i < kPrompts; ++i) {
      for (int j = 0; j < kCandidates; ++j) {
        const auto id = run::seed_task_id(k, i, j);
        const auto bytes = queue.result(id);
        ASSERT_TRUE(bytes.has_value()) << id << "\n" << explorer.log_tail();
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
