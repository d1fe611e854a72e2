// The spotlight-explorer binary as a process against a real redis-server: the test plays the
// trainer and the planner (publishes weights, sets trainer_iteration, enqueues seed tasks).
// Finds the binary through SPOTLIGHT_BINARY_DIR (set by ctest).

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "common/queue/redis_lease_queue.hpp"
#include "common/run/run_config.hpp"
#include "common/run/run_state.hpp"
#include "common/run/task_key_source.hpp"
#include "common/store/redis_key_value_store.hpp"
#include "common/store/redis_weight_store.hpp"
#include "tests/common/metrics/http_get.hpp"
#include "tests/services/explorer/explorer_test_support.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/wait_for.hpp"

namespace spotlight::explorer {
namespace {

using namespace std::chrono_literals;
using spotlight::testing::wait_for;

constexpr auto kWait = 90s;
constexpr int kGraceSeconds = 10;

std::optional<std::string> binary_path() {
  const char* dir = std::getenv("SPOTLIGHT_BINARY_DIR");
  if (dir == nullptr) return std::nullopt;
  return std::string(dir) + "/services/explorer/spotlight-explorer";
}

#define SPOTLIGHT_REQUIRE_EXPLORER_BINARY()                                        \
  do {                                                                             \
    SPOTLIGHT_REQUIRE_REDIS_SERVER();                                              \
    const auto p = binary_path();                                                  \
    if (!p) GTEST_SKIP() << "SPOTLIGHT_BINARY_DIR is not set (run through ctest)"; \
    if (::access(p->c_str(), X_OK) != 0) FAIL() << "no executable at " << *p;      \
  } while (0)

// The explorer binary as a child process (common/process) writing its log to a file in a temp
// dir. Killed (SIGKILL) when destroyed if still running, and when the test's thread dies
// (PDEATHSIG).
class ExplorerProcess {
 public:
  explicit ExplorerProcess(const std::vector<std::string>& args)
      : dir_("spotlight-explorer-e2e"), process_(options(args, dir_.path / "explorer.log")) {}

  void signal(int signo) { process_.signal(signo); }

  // The exit status (128 + signal when signalled) once the process has exited within `timeout`,
  // else nullopt.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout) { return process_.wait(timeout); }

  std::string output() const { return process_.log_tail(std::string::npos); }

 private:
  static process::ProcessOptions options(const std::vector<std::string>& args,
                                         const std::filesystem::path& log) {
    process::ProcessOptions o;
    o.argv = {*binary_path()};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    o.env["SPOTLIGHT_LOG_LEVEL"] = "info";  // the assertions read its info lines
    o.log = log;
    return o;
  }
  spotlight::testing::TempDir dir_;  // removed after the process is gone
  spotlight::testing::Process process_;
};

// The "explorer <id> done: ..." line of a log, or "" when there is none.
std::string summary_line(const std::string& log) {
  const auto at = log.find("done: ");
  if (at == std::string::npos) return "";
  const auto end = log.find('\n', at);
  return log.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

class ExplorerBinaryTest : public ::testing::Test {
 protected:
  void start_run(const std::string& run_id, std::chrono::milliseconds lease_timeout) {
    at::set_num_threads(1);
    server_ = std::make_unique<spotlight::testing::RedisServer>();
    run_id_ = run_id;
    keys_ = std::make_unique<run::RunKeys>(run_id);
    queue::LeaseQueueOptions q;
    q.key_prefix = keys_->explore_queue;
    q.lease_timeout = lease_timeout;
    queue_ = std::make_unique<queue::RedisLeaseQueue>(server_->client_options(), q);
    kv_ = std::make_unique<store::RedisKeyValueStore>(server_->client_options(), keys_->prefix);
    // Playing the trainer at a fresh start: weights version 0 (its manifest signed with the run's
    // key, as the trainer signs it), then trainer_iteration = 0.
    store::WeightStoreOptions w;
    w.key_prefix = keys_->prefix;
    w.manifest_key = run::manifest_key_source(server_->client_options(), keys_->prefix,
                                              /*create=*/true);
    store::RedisWeightStore weights(server_->client_options(), w);
    weights.publish(0, testing::micro_policy(21)->weights_bytes());
    kv_->put(keys_->trainer_iteration, wire::TrainerProgress{.iteration = 0}.encode());
  }

  std::vector<std::string> args(const std::string& id,
                                std::chrono::milliseconds lease_timeout) const {
    return {"--set", "redis.port=" + std::to_string(server_->port()), "--set", "run.id=" + run_id_,
            "--set", "model.preset=micro", "--set", "trainer.iterations=1",
            // The task limits the tests' tasks need (run seed, prompts, candidates, steps).
            "--set", "run.seed=" + std::to_string(testing::kRunSeed), "--set",
            "trainer.prompts_per_iteration=8", "--set", "exploration.candidates=32", "--set",
            "sampler.steps=1000", "--set", "explorer.id=" + id, "--set", "explorer.batch=4",
            "--set", "explorer.heartbeat_ms=100", "--set",
            "explorer.grace_seconds=" + std::to_string(kGraceSeconds), "--set",
            "exploration.lease_timeout_ms=" + std::to_string(lease_timeout.count()), "--set",
            "run.threads=1"};
  }

  std::unique_ptr<spotlight::testing::RedisServer> server_;
  std::string run_id_;
  std::unique_ptr<run::RunKeys> keys_;
  std::unique_ptr<queue::RedisLeaseQueue> queue_;
  std::unique_ptr<store::RedisKeyValueStore> kv_;
};

TEST_F(ExplorerBinaryTest, CompletesTheTasksThenExitsWhenTheRunEnds) {
  SPOTLIGHT_REQUIRE_EXPLORER_BINARY();
  start_run("e2e-finish", 30s);
  const auto tasks = testing::seed_tasks(run_id_, 0, 2, 3, 0, 4);
  ASSERT_EQ(
      testing::enqueue(*queue_, tasks, testing::run_task_key(server_->client_options(), run_id_)),
      6);

  auto a = args("e2e-1", 30s);
  a.insert(a.end(), {"--set", "metrics.bind=127.0.0.1:0"});
  ExplorerProcess process(a);
  const bool done = wait_for(
      [&] {
        for (const auto& t : tasks) {
          if (!queue_->result(t.id)) return false;
        }
        return true;
      },
      kWait);
  ASSERT_TRUE(done) << process.output();
  for (const auto& t : tasks) {
    const auto r = wire::SeedResult::decode(*queue_->result(t.id));
    EXPECT_EQ(r.seed, t.task.seed);
    EXPECT_EQ(r.prompt_index, t.task.prompt_index);
    EXPECT_EQ(r.iteration, 0);
    EXPECT_EQ(r.weights_version_used, 0);
    EXPECT_EQ(r.explorer_id, "e2e-1");
    EXPECT_GE(r.reward, 0.0);
    EXPECT_LE(r.reward, 1.0);
  }
  const auto beat = run::RunState(*kv_, *keys_).heartbeat("e2e-1");
  ASSERT_TRUE(beat.has_value());
  EXPECT_EQ(beat->explorer_id, "e2e-1");

  // Its metrics, scraped like Prometheus does ("metrics on http://IP:PORT/metrics" in its log).
  std::smatch m;
  const std::string log = process.output();
  ASSERT_TRUE(std::regex_search(log, m, std::regex(R"(metrics on http://([0-9.]+):(\d+)/metrics)")))
      << log;
  const auto scrape = spotlight::testing::http_get(m[1].str(), std::stoi(m[2].str()), "/metrics");
  EXPECT_EQ(scrape.status, 200);
  for (const char* line :
       {"spotlight_explorer_tasks_completed_total 6", "spotlight_explorer_weights_version 0",
        "spotlight_explorer_malformed_tasks_total 0"}) {
    EXPECT_NE(scrape.body.find(line), std::string::npos) << line << "\n" << scrape.body;
  }
  EXPECT_FALSE(process.wait_exit(0ms)) << "exited before the run ended\n" << process.output();

  kv_->put(keys_->trainer_iteration,  // == trainer.iterations: the run is over
           wire::TrainerProgress{.iteration = 1, .finished = true}.encode());
  const auto status = process.wait_exit(20s);
  ASSERT_TRUE(status) << "still running after the run ended\n" << process.output();
  EXPECT_EQ(*status, 0) << process.output();
  EXPECT_NE(process.output().find("run finished"), std::string::npos) << process.output();
}

TEST_F(ExplorerBinaryTest, SigtermMidRunExitsInGraceAndLosesNoTask) {
  SPOTLIGHT_REQUIRE_EXPLORER_BINARY();
  // Leases never expire during the test: whatever is not completed must have been released.
  constexpr auto kLeaseTimeout = 600s;
  start_run("e2e-sigterm", kLeaseTimeout);
  const auto tasks = testing::seed_tasks(run_id_, 0, 8, 32, 0, 20);  // 256 tasks
  ASSERT_EQ(
      testing::enqueue(*queue_, tasks, testing::run_task_key(server_->client_options(), run_id_)),
      256);

  ExplorerProcess process(args("e2e-2", kLeaseTimeout));
  ASSERT_TRUE(wait_for([&] { return queue_->result_count() >= 8; }, kWait)) << process.output();
  const auto sent = std::chrono::steady_clock::now();
  process.signal(SIGTERM);
  const auto status = process.wait_exit(std::chrono::seconds(kGraceSeconds));
  ASSERT_TRUE(status) << "still running " << kGraceSeconds << " s after SIGTERM\n"
                      << process.output();
  EXPECT_EQ(*status, 0) << process.output();
  EXPECT_LT(std::chrono::steady_clock::now() - sent, std::chrono::seconds(kGraceSeconds));
  EXPECT_NE(process.output().find("received SIGTERM"), std::string::npos) << process.output();

  // No task lost: each has a result or can be leased again right now (released leases are
  // re-delivered by reclaim() at once; never-delivered ones by lease()), never both.
  std::set<std::string> completed;
  queue_->for_each_result([&](std::string_view id, std::string_view) { completed.emplace(id); });
  ASSERT_LT(completed.size(), tasks.size()) << "all tasks finished before SIGTERM: vacuous";
  std::set<std::string> redeliverable;
  for (const auto& l : queue_->reclaim("checker", kLeaseTimeout, 1000))
    redeliverable.insert(l.task_id);
  for (const auto& l : queue_->lease("checker", 1000, 0ms))
    redeliverable.insert(l.task_id);
  for (const auto& t : tasks) {
    EXPECT_NE(completed.count(t.id) + redeliverable.count(t.id), 0u) << t.id << " was lost";
    EXPECT_FALSE(completed.count(t.id) && redeliverable.count(t.id)) << t.id << " twice";
  }
  EXPECT_EQ(completed.size() + redeliverable.size(), tasks.size());
  std::cout << "[ info     ] " << completed.size() << " completed, " << redeliverable.size()
            << " re-deliverable after SIGTERM; the explorer's summary: "
            << summary_line(process.output()) << "\n";
}

// Issue #4: a preemption notice file (as a node agent would drop it) makes the explorer commit
// its chunk in flight and exit 0; a second explorer resumes the committed tasks from their step.
TEST_F(ExplorerBinaryTest, NoticeFileCommitsTheChunkInFlightAndAnotherExplorerResumesIt) {
  SPOTLIGHT_REQUIRE_EXPLORER_BINARY();
  constexpr auto kLeaseTimeout = 600s;
  // One chunk of 4 that takes seconds, so the notice lands inside (the most steps a run allows).
  constexpr int kLongSteps = 1000;
  start_run("e2e-notice", kLeaseTimeout);
  const auto tasks = testing::seed_tasks(run_id_, 0, 1, 4, 0, kLongSteps);
  ASSERT_EQ(
      testing::enqueue(*queue_, tasks, testing::run_task_key(server_->client_options(), run_id_)),
      4);
  char dir_template[] = "/tmp/explorer-notice-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::filesystem::path dir = dir_template;
  const auto notice = dir / "preempted";
  auto a = args("e2e-n1", kLeaseTimeout);
  for (const std::string& extra :
       {std::string("--set"), "explorer.preemption_notice_file=" + notice.string(),
        std::string("--set"), std::string("explorer.preemption_poll_ms=20")})
    a.push_back(extra);
  ExplorerProcess first(a);
  ASSERT_TRUE(wait_for([&] { return kv_->counter(keys_->sample_steps) > 0; }, kWait))
      << first.output();
  {  // written whole, then renamed into place: the explorer polls and may not read half a file
    const auto part = dir / "preempted.part";
    std::ofstream(part) << "spot instance reclaim\n";
    std::filesystem::rename(part, notice);
  }
  const auto status = first.wait_exit(std::chrono::seconds(kGraceSeconds));
  ASSERT_TRUE(status) << "still running after the notice\n" << first.output();
  EXPECT_EQ(*status, 0) << first.output();
  EXPECT_NE(first.output().find("preemption notice: spot instance reclaim"), std::string::npos)
      << first.output();
  EXPECT_EQ(queue_->result_count(), 0) << "the chunk finished before the notice: vacuous";
  std::int64_t committed_steps = 0;
  for (const auto& t : tasks) {
    const auto bytes = kv_->get(keys_->inflight(t.id));
    ASSERT_TRUE(bytes.has_value()) << t.id << " was not committed\n" << first.output();
    const auto c = wire::InflightCommit::decode(*bytes);
    EXPECT_GT(c.step_index, 0);
    EXPECT_LT(c.step_index, kLongSteps);
    committed_steps += c.step_index;
  }

  ExplorerProcess second(args("e2e-n2", kLeaseTimeout));
  ASSERT_TRUE(wait_for([&] { return queue_->result_count() == 4; }, kWait)) << second.output();
  EXPECT_EQ(kv_->counter(keys_->resumed_steps), committed_steps);
  // No step computed twice: the first explorer's steps plus the second's are exactly the job.
  EXPECT_EQ(kv_->counter(keys_->sample_steps), 4 * kLongSteps);
  EXPECT_NE(second.output().find("resuming 4 committed task(s)"), std::string::npos)
      << second.output();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spotlight::explorer
