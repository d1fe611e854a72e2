// The real spotlight-planner binary against a real redis-server: it waits for the trainer,
// enqueues iterations 0 and 1 once trainer_iteration = 0, exits 0 on SIGTERM, and exits 0 by
// itself once trainer_iteration >= trainer.iterations.

#include <csignal>
#include <filesystem>

#include <unistd.h>

#include "common/run/schedule.hpp"
#include "tests/common/metrics/http_get.hpp"
#include "tests/services/planner/planner_fixture.hpp"
#include "tests/support/process.hpp"
#include "tests/support/wait_for.hpp"

namespace spotlight::planner::test {
namespace {

using namespace std::chrono_literals;
using spotlight::testing::wait_for;

// One spotlight-planner process (common/process); its stdout and stderr go to a file in a fresh
// temp dir.
class PlannerProcess {
 public:
  explicit PlannerProcess(const std::vector<std::string>& args)
      : dir_("planner-e2e"), process_(binary(), args, dir_.path / "planner.log") {}

  void signal(int signo) { process_.signal(signo); }

  // The exit status (128 + signal when signalled) once the process exited within `timeout`;
  // nullopt while it still runs.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout) { return process_.wait(timeout); }

  std::string log() const { return process_.log_tail(std::string::npos); }

 private:
  static std::filesystem::path binary() {
    const auto path = spotlight::testing::binary_path("services/planner/spotlight-planner");
    if (::access(path.c_str(), X_OK) != 0) throw std::runtime_error(path.string() + " not built");
    return path;
  }
  spotlight::testing::TempDir dir_;  // removed after the process is gone
  spotlight::testing::Process process_;
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
