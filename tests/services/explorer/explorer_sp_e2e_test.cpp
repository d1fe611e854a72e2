// The spotlight-explorer binary with explorer.sp.size=2: its chunks run on an SP group of
// `spotlight-node rank` processes. One of them is SIGKILLed mid-job; the group regroups from the
// survivor and the spare and every task is completed by this explorer under its first lease:
// none fails, none waits for lease expiry (the lease timeout outlasts the test).

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/queue/redis_lease_queue.hpp"
#include "common/run/run_config.hpp"
#include "common/run/task_key_source.hpp"
#include "common/store/redis_key_value_store.hpp"
#include "common/store/redis_weight_store.hpp"
#include "tests/services/explorer/explorer_test_support.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/wait_for.hpp"

namespace spotlight::explorer {
namespace {

using namespace std::chrono_literals;
using spotlight::testing::wait_for;

// The rank processes the explorer spawned (children of any of its threads), oldest first.
std::vector<pid_t> children(pid_t parent) {
  std::vector<pid_t> out;
  std::error_code error;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(parent) + "/task", error)) {
    std::ifstream in(task.path() / "children");
    for (pid_t pid; in >> pid;)
      out.push_back(pid);
  }
  // By start time (/proc/<pid>/stat field 22): pids wrap around.
  auto started = [](pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 22 && fields >> field; ++i) {
    }
    return std::stoull(field.empty() ? "0" : field);
  };
  std::vector<std::pair<unsigned long long, pid_t>> by_start;
  for (pid_t pid : out)
    by_start.emplace_back(started(pid), pid);
  std::sort(by_start.begin(), by_start.end());
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = by_start[i].second;
  return out;
}

TEST(ExplorerSp, SigkillOfAGroupMemberMidJobLosesNoTask) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  if (!std::filesystem::exists("/proc/self/task/" + std::to_string(getpid()) + "/children")) {
    GTEST_SKIP() << "this kernel has no /proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN)";
  }
  at::set_num_threads(1);
  spotlight::testing::RedisServer server;
  const std::string run_id = "e2e-sp";
  const run::RunKeys keys(run_id);
  constexpr auto kLeaseTimeout = 600s;
  queue::LeaseQueueOptions q;
  q.key_prefix = keys.explore_queue;
  q.lease_timeout = kLeaseTimeout;
  queue::RedisLeaseQueue queue(server.client_options(), q);
  store::RedisKeyValueStore kv(server.client_options(), keys.prefix);
  store::WeightStoreOptions w;
  w.key_prefix = keys.prefix;
  // Signed with the run's key, as the trainer signs it: the explorer refuses unsigned manifests.
  w.manifest_key = run::manifest_key_source(server.client_options(), keys.prefix, /*create=*/true);
  store::RedisWeightStore weights(server.client_options(), w);
  weights.publish(0, testing::micro_policy(21)->weights_bytes());
  kv.put(keys.trainer_iteration, wire::TrainerProgress{.iteration = 0}.encode());
  const auto tasks = testing::seed_tasks(run_id, 0, 4, 4, 0, 20);  // 16 tasks, 4 chunks
  ASSERT_EQ(testing::enqueue(queue, tasks, testing::run_task_key(server.client_options(), run_id)),
            16);

  const auto dir = spotlight::testing::make_temp_dir("spotlight-explorer-sp");
  spotlight::testing::Process explorer(
      spotlight::testing::binary_path("services/explorer/spotlight-explorer"),
      {"--set", "redis.port=" + std::to_string(server.port()),
       "--set", "run.id=" + run_id,
       "--set", "model.preset=micro",
       "--set", "trainer.iterations=1",
       "--set", "run.seed=" + std::to_string(testing::kRunSeed),
       "--set", "trainer.prompts_per_iteration=8",
       "--set", "exploration.candidates=32",
       "--set", "sampler.steps=1000",
       "--set", "explorer.id=sp-1",
       "--set", "explorer.batch=4",
       "--set", "explorer.heartbeat_ms=100",
       "--set", "exploration.lease_timeout_ms=600000",
       "--set", "run.threads=1",
       "--set", "explorer.sp.size=2",
       "--set", "explorer.sp.spares=1",
       "--set", "explorer.sp.op_timeout_ms=3000"},
      dir / "explorer.log");

  // Mid-job: the first results are in, the rest are not.
  ASSERT_TRUE(wait_for([&] { return queue.result_count() >= 1; }, 120s)) << explorer.log_tail();
  const auto ranks = children(explorer.pid());
  ASSERT_EQ(ranks.size(), 3u) << explorer.log_tail();
  ASSERT_LT(queue.result_count(), 16) << "the job ended before the kill; use more tasks";
  ASSERT_EQ(kill(ranks[0], SIGKILL), 0);  // the oldest rank: a member of the first group

  const bool done = wait_for(
      [&] {
        for (const auto& t : tasks) {
          if (!queue.result(t.id)) return false;
        }
        return true;
      },
      120s);
  ASSERT_TRUE(done) << explorer.log_tail();
  for (const auto& t : tasks) {
    const auto r = wire::SeedResult::decode(*queue.result(t.id));
    EXPECT_EQ(r.explorer_id, "sp-1");
    EXPECT_EQ(r.seed, t.task.seed);
  }
  const auto log = explorer.log_tail(1 << 20);
  EXPECT_NE(log.find("regrouped"), std::string::npos) << log;
  EXPECT_EQ(log.find("task(s) failed"), std::string::npos) << log;  // no chunk failed
  EXPECT_EQ(children(explorer.pid()).size(), 3u) << "the lost rank was not replaced";

  kv.put(keys.trainer_iteration,  // the run is over: the explorer exits
         wire::TrainerProgress{.iteration = 1, .finished = true}.encode());
  const auto status = explorer.wait(30s);
  ASSERT_TRUE(status) << explorer.log_tail();
  EXPECT_EQ(*status, 0) << explorer.log_tail();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spotlight::explorer
