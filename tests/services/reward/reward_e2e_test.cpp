// The spotlight-reward binary as a process: start it on free ports, score through RemoteReward,
// scrape its metrics, stop it with SIGTERM. Finds the binary through SPOTLIGHT_BINARY_DIR (set by
// ctest).

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <future>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/task/generator.hpp"
#include "common/task/render.hpp"
#include "services/reward/remote_reward.hpp"
#include "tests/common/metrics/http_get.hpp"

extern char** environ;

namespace spotlight::reward {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr auto kStartTimeout = 20s;
constexpr auto kStopTimeout = 10s;  // SIGTERM to exit; the HTTP listener alone may take ~2 s

std::optional<std::string> binary_path() {
  const char* dir = std::getenv("SPOTLIGHT_BINARY_DIR");
  if (dir == nullptr) return std::nullopt;
  return std::string(dir) + "/services/reward/spotlight-reward";
}

// The reward binary as a child process, its stderr on a pipe. Killed (SIGKILL) when destroyed
// if still running, and when the test process dies (PR_SET_PDEATHSIG).
class RewardProcess {
 public:
  explicit RewardProcess(const std::vector<std::string>& args) {
    const auto path = binary_path();
    std::vector<std::string> argv_s = {*path};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<std::string> env_s;
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::strncmp(*e, "SPOTLIGHT_LOG_LEVEL=", 20) != 0) env_s.emplace_back(*e);
    }
    env_s.emplace_back("SPOTLIGHT_LOG_LEVEL=info");
    std::vector<char*> argv, envp;
    for (auto& a : argv_s)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env_s)
      envp.push_back(e.data());
    envp.push_back(nullptr);

    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {  // child: async-signal-safe calls only
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      ::dup2(fds[1], STDERR_FILENO);
      ::dup2(fds[1], STDOUT_FILENO);
      ::execve(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    err_ = fds[0];
    exited_ = std::async(std::launch::async, [pid = pid_] {
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return status;
    });
  }
  ~RewardProcess() {
    if (!status_) {
      ::kill(pid_, SIGKILL);
      exited_.wait();
    }
    ::close(err_);
  }

  // Reads output until a line matches `pattern`; returns its first capture group, or nullopt
  // when the deadline passes or the process closes its output first.
  std::optional<std::string> wait_for_line(const std::regex& pattern, Clock::duration timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      for (std::size_t nl; (nl = pending_.find('\n')) != std::string::npos;) {
        const std::string line = pending_.substr(0, nl);
        pending_.erase(0, nl + 1);
        std::smatch m;
        if (std::regex_search(line, m, pattern)) return m.size() > 1 ? m[1].str() : line;
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd item{err_, POLLIN, 0};
      if (::poll(&item, 1, static_cast<int>(left.count()) + 1) <= 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(err_, buffer, sizeof buffer);
      if (n <= 0) return std::nullopt;
      pending_.append(buffer, static_cast<std::size_t>(n));
      output_.append(buffer, static_cast<std::size_t>(n));
    }
  }

  // Everything the process wrote (reads the rest once it has exited).
  const std::string& output() {
    if (status_) {
      char buffer[4096];
      for (ssize_t n; (n = ::read(err_, buffer, sizeof buffer)) > 0;) {
        output_.append(buffer, static_cast<std::size_t>(n));
      }
    }
    return output_;
  }

  void signal(int signo) { ::kill(pid_, signo); }

  // The wait status once the process has exited within `timeout`, else nullopt.
  std::optional<int> wait_exit(Clock::duration timeout) {
    if (!status_ && exited_.wait_for(timeout) == std::future_status::ready) status_ = exited_.get();
    return status_;
  }

 private:
  pid_t pid_ = -1;
  int err_ = -1;
  std::future<int> exited_;
  std::optional<int> status_;
  std::string pending_, output_;
};

#define SPOTLIGHT_REQUIRE_REWARD_BINARY()                                          \
  do {                                                                             \
    const auto p = binary_path();                                                  \
    if (!p) GTEST_SKIP() << "SPOTLIGHT_BINARY_DIR is not set (run through ctest)"; \
    if (::access(p->c_str(), X_OK) != 0) FAIL() << "no executable at " << *p;      \
  } while (0)

TEST(RewardBinary, ScoresThroughRemoteRewardAndStopsCleanlyOnSigterm) {
  SPOTLIGHT_REQUIRE_REWARD_BINARY();
  RewardProcess process({"--set", "reward.bind=tcp://127.0.0.1:*", "--set",
                         "metrics.bind=127.0.0.1:0", "--set", "reward.batch_window_ms=1"});
  const auto metrics_url =
      process.wait_for_line(std::regex(R"(metrics on (http://\S+))"), kStartTimeout);
  ASSERT_TRUE(metrics_url) << process.output();
  const auto endpoint =
      process.wait_for_line(std::regex(R"(listening on (tcp://\S+))"), kStartTimeout);
  ASSERT_TRUE(endpoint) << process.output();

  RemoteRewardOptions options;
  options.endpoint = *endpoint;
  options.rpc.timeout = 5s;
  RemoteReward remote(options);
  const task::TaskOptions task;
  const task::PromptGenerator generator(task);
  std::vector<task::Prompt> prompts;
  std::vector<task::Image> images;
  for (std::uint64_t seed = 0; seed < 6; ++seed) {
    prompts.push_back(generator.sample(seed));
    images.push_back(seed % 2 == 0 ? task::render(prompts.back(), seed, task)
                                   : task::Image::blank(task.image_size, task.image_size));
  }
  const auto scores = remote.score(prompts, images);
  ASSERT_EQ(scores.size(), 6u);
  for (std::size_t i = 0; i < scores.size(); ++i) {
    EXPECT_EQ(scores[i].correct, i % 2 == 0) << prompts[i].text();
    if (i % 2 == 0) {
      EXPECT_EQ(scores[i].reward, 1.0) << prompts[i].text();
    } else {
      EXPECT_LT(scores[i].reward, 0.25) << prompts[i].text();
    }
  }

  // "http://127.0.0.1:PORT/metrics"
  std::smatch m;
  ASSERT_TRUE(std::regex_match(*metrics_url, m, std::regex(R"(http://([0-9.]+):(\d+)/metrics)")));
  const auto scrape = testing::http_get(m[1].str(), std::stoi(m[2].str()), "/metrics");
  EXPECT_EQ(scrape.status, 200);
  EXPECT_NE(scrape.body.find("spotlight_reward_images_scored_total 6"), std::string::npos)
      << scrape.body;

  const auto sent = Clock::now();
  process.signal(SIGTERM);
  const auto status = process.wait_exit(kStopTimeout);
  ASSERT_TRUE(status) << "still running " << kStopTimeout.count() << " s after SIGTERM";
  EXPECT_TRUE(WIFEXITED(*status)) << "status " << *status << "\n" << process.output();
  EXPECT_EQ(WEXITSTATUS(*status), 0) << process.output();
  EXPECT_LT(Clock::now() - sent, 5s);
  EXPECT_NE(process.output().find("stopping"), std::string::npos) << process.output();
}

TEST(RewardBinary, SigintStopsAnIdleServiceToo) {
  SPOTLIGHT_REQUIRE_REWARD_BINARY();
  RewardProcess process(
      {"--set", "reward.bind=tcp://127.0.0.1:*", "--set", "metrics.bind="});  // no HTTP
  ASSERT_TRUE(process.wait_for_line(std::regex("listening on"), kStartTimeout)) << process.output();
  process.signal(SIGINT);
  const auto status = process.wait_exit(kStopTimeout);
  ASSERT_TRUE(status);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << process.output();
}

TEST(RewardBinary, RejectsAnUnusableConfigurationAtStart) {
  SPOTLIGHT_REQUIRE_REWARD_BINARY();
  struct Case {
    std::vector<std::string> args;
    std::string in_message;
  };
  const std::vector<Case> cases = {
      {{"--set", "reward.functions=[task, clip]", "--set", "reward.weights=[1, 1]"}, "clip"},
      {{"--set", "reward.weights=[1, 2]"}, "reward.weights"},
      {{"--set", "reward.max_batch=0"}, "reward.max_batch"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = c.args;
    args.insert(args.end(), {"--set", "reward.bind=tcp://127.0.0.1:*", "--set", "metrics.bind="});
    RewardProcess process(args);
    const auto status = process.wait_exit(kStopTimeout);
    ASSERT_TRUE(status) << c.in_message;
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 2) << process.output();
    EXPECT_NE(process.output().find(c.in_message), std::string::npos) << process.output();
  }
}

}  // namespace
}  // namespace spotlight::reward
