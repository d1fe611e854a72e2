// The real spotlight-planner binary against a real redis-server: it waits for the trainer,
// enqueues iterations 0 and 1 once trainer_iteration = 0, exits 0 on SIGTERM, and exits 0 by
// itself once trainer_iteration >= trainer.iterations.

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/run/schedule.hpp"
#include "tests/common/metrics/http_get.hpp"
#include "tests/common/redis/wait_for.hpp"
#include "tests/services/planner/planner_fixture.hpp"

extern char** environ;

namespace spotlight::planner::test {
namespace {

using namespace std::chrono_literals;
using spotlight::testing::wait_for;

// One spotlight-planner process; its stdout and stderr go to a file in a fresh temp dir.
class PlannerProcess {
 public:
  explicit PlannerProcess(const std::vector<std::string>& args) {
    const char* binary_dir = std::getenv("SPOTLIGHT_BINARY_DIR");
    if (binary_dir == nullptr) throw std::runtime_error("SPOTLIGHT_BINARY_DIR is not set");
    const std::string binary = std::string(binary_dir) + "/services/planner/spotlight-planner";
    if (::access(binary.c_str(), X_OK) != 0) throw std::runtime_error(binary + " not built");
    const char* tmp = std::getenv("TMPDIR");
    std::string dir_template = std::string(tmp != nullptr ? tmp : "/tmp") + "/planner-e2e-XXXXXX";
    if (::mkdtemp(dir_template.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = dir_template;
    log_ = dir_ / "planner.log";

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    std::vector<std::string> argv_strings = {binary};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_strings)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    const int rc = ::posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error("posix_spawn failed: " + std::to_string(rc));
  }
  ~PlannerProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  void signal(int signo) const { ::kill(pid_, signo); }

  // The exit status once the process exited within `timeout`; nullopt while it still runs.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout) {
    wait_for(
        [&] {
          int status = 0;
          if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
          }
          return status_.has_value();
        },
        timeout);
    return status_;
  }

  std::string log() const {
    std::ifstream in(log_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  std::filesystem::path dir_;
  std::filesystem::path log_;
  pid_t pid_ = -1;
  std::optional<int> status_;
};

class PlannerE2eTest : public RedisFixture {
 protected:
  std::vector<std::string> args() const {
    return {"--set", "redis.port=" + std::to_string(server().port()),
            "--set", "run.id=" + run_id(),
            "--set", "trainer.iterations=3",
            "--set", "trainer.prompts_per_iteration=2",
            "--set", "exploration.candidates=3",
            "--set", "planner.poll_ms=20"};
  }
  // The task ids of the stream, by iteration.
  static std::map<std::int64_t, std::set<std::string>> ids_by_iteration() {
    std::map<std::int64_t, std::set<std::string>> out;
    for (const auto& [id, task] : stream_tasks())
      out[task.iteration].insert(id);
    return out;
  }
  static std::set<std::string> expected_ids(std::int64_t iteration) {
    std::set<std::string> ids;
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 3; ++j)
        ids.insert(run::seed_task_id(iteration, i, j));
    }
    return ids;
  }
};

TEST_F(PlannerE2eTest, EnqueuesForTheTrainerAndExitsZeroOnSigterm) {
  auto with_metrics = args();
  with_metrics.insert(with_metrics.end(), {"--set", "metrics.bind=127.0.0.1:0"});
  PlannerProcess planner(with_metrics);
  // It waits for the trainer: nothing is enqueued before trainer_iteration exists.
  EXPECT_FALSE(planner.wait_exit(300ms)) << planner.log();
  EXPECT_TRUE(stream_tasks().empty());

  set_trainer_iteration(0);
  EXPECT_TRUE(wait_for([] { return planner_state() == 1; }, kPatience)) << planner.log();
  const auto ids = ids_by_iteration();
  EXPECT_EQ(ids, (std::map<std::int64_t, std::set<std::string>>{{0, expected_ids(0)},
                                                                {1, expected_ids(1)}}));

  // Its metrics endpoint (the port it picked is in its log) counts the same tasks.
  const std::string marker = "metrics on http://127.0.0.1:";
  const std::string log = planner.log();
  const auto at = log.find(marker);
  ASSERT_NE(at, std::string::npos) << log;
  const int port = std::stoi(log.substr(at + marker.size()));
  const auto response = spotlight::testing::http_get("127.0.0.1", port, "/metrics");
  EXPECT_EQ(response.status, 200);
  EXPECT_NE(response.body.find("spotlight_planner_tasks_enqueued_total 12"), std::string::npos)
      << response.body;

  planner.signal(SIGTERM);
  const auto status = planner.wait_exit(kPatience);
  ASSERT_TRUE(status) << "still running 20 s after SIGTERM\n" << planner.log();
  EXPECT_EQ(*status, 0) << planner.log();
  EXPECT_NE(planner.log().find("stopped by SIGTERM"), std::string::npos) << planner.log();
}

TEST_F(PlannerE2eTest, ExitsZeroByItselfWhenTheTrainerIsDone) {
  set_trainer_iteration(2);
  PlannerProcess planner(args());
  EXPECT_TRUE(wait_for([] { return planner_state() == 2; }, kPatience)) << planner.log();
  EXPECT_FALSE(planner.wait_exit(200ms)) << "exited before the trainer was done\n" << planner.log();
  set_trainer_iteration(3);  // = trainer.iterations
  const auto status = planner.wait_exit(kPatience);
  ASSERT_TRUE(status) << "still running 20 s after the trainer finished\n" << planner.log();
  EXPECT_EQ(*status, 0) << planner.log();
  // Only iteration 2 was ever planned (the trainer was past 0 and 1; there is no 3).
  EXPECT_EQ(ids_by_iteration(),
            (std::map<std::int64_t, std::set<std::string>>{{2, expected_ids(2)}}));
}

TEST_F(PlannerE2eTest, RejectsAnUnknownKeyWithStatusTwo) {
  PlannerProcess planner({"--set", "planner.no_such_key=1"});
  const auto status = planner.wait_exit(kPatience);
  ASSERT_TRUE(status);
  EXPECT_EQ(*status, 2) << planner.log();
}

}  // namespace
}  // namespace spotlight::planner::test
