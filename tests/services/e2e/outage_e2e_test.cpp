// Redis trouble with the whole system running as processes (issue #13, item 1): redis-server is
// SIGKILLed and restarted 5 s later, then SIGSTOPped for 15 s; every service must ride through
// (nothing aborts, one log line per change of state), the job must finish with every task
// accounted for once, and the recovery times are printed (Redis back -> first successful call in
// each service). Then: the trainer's outage limit (exit 5, resume), and a wrong password (every
// service exits 4 with one line, at once).
#include <cstdio>
#include <ctime>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <stdlib.h>

#include "common/clock/unix_time.hpp"
#include "common/process/process.hpp"
#include "common/queue/redis_lease_queue.hpp"
#include "common/run/run_config.hpp"
#include "common/service/exit_codes.hpp"
#include "services/job/job_schema.hpp"
#include "tests/services/e2e/log_lines.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/wait_for.hpp"
#include "tools/cluster/cluster.hpp"

namespace spotlight {
namespace {

using namespace std::chrono_literals;
using testing::lines_with;
using testing::Process;

constexpr int kPrompts = 2;
constexpr int kCandidates = 6;

std::vector<std::int64_t> trained_iterations(const std::filesystem::path& metrics) {
  std::vector<std::int64_t> out;
  for (const auto& line : testing::read_lines(metrics)) {
    out.push_back(nlohmann::json::parse(line).at("iteration").get<std::int64_t>());
  }
  return out;
}

std::int64_t last_iteration(const std::filesystem::path& metrics) {
  const auto its = trained_iterations(metrics);
  return its.empty() ? -2 : its.back();
}

// The job's settings (key=value), without its endpoints.
std::vector<std::string> settings(const std::string& run_id, const std::filesystem::path& dir,
                                  int iterations) {
  return {"run.id=" + run_id,
          "run.dir=" + (dir / "run").string(),
          "model.preset=micro",
          "exploration.mode=async",
          "exploration.candidates=" + std::to_string(kCandidates),
          "trainer.iterations=" + std::to_string(iterations),
          "trainer.prompts_per_iteration=" + std::to_string(kPrompts),
          "trainer.group_size=4",
          "trainer.micro_batch=4",
          "sampler.steps=4",
          "validation.prompts=4",
          "validation.steps=3",
          "validation.every=100",
          "audit.every=0",
          "run.threads=1",
          "explorer.batch=4",
          "explorer.heartbeat_ms=200",
          "planner.poll_ms=50"};
}

// The command line of a service started by hand against `redis_port`.
std::vector<std::string> run_args(const std::string& run_id, const std::filesystem::path& dir,
                                  int redis_port, int iterations) {
  std::vector<std::string> args = {
      "--set", "redis.port=" + std::to_string(redis_port), "--set",
      "bus.trainer_endpoint=tcp://127.0.0.1:" + std::to_string(testing::free_port())};
  for (const auto& s : settings(run_id, dir, iterations))
    args.insert(args.end(), {"--set", s});
  return args;
}

std::vector<std::string> plus(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// When redis-server last said it accepts connections (its log's own timestamp, UTC), in ms
// since the epoch; nullopt when its log has no such line.
std::optional<std::int64_t> redis_ready_ms(const std::filesystem::path& redis_log) {
  std::optional<std::int64_t> last;
  for (const auto& line : lines_with(redis_log, "Ready to accept connections")) {
    // "1234:M 01 Dec 2026 15:57:42.123 * Ready to accept connections tcp"
    const auto colon = line.find(':');
    if (colon == std::string::npos || colon + 3 > line.size()) continue;
    std::tm tm{};
    int ms = 0;
    char month[4] = {};
    if (std::sscanf(line.c_str() + colon + 3, "%2d %3s %4d %2d:%2d:%2d.%3d", &tm.tm_mday, month,
                    &tm.tm_year, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) != 7) {
      continue;
    }
    static const std::string months = "JanFebMarAprMayJunJulAugSepOctNovDec";
    tm.tm_mon = static_cast<int>(months.find(month) / 3);
    tm.tm_year -= 1900;
    last = static_cast<std::int64_t>(timegm(&tm)) * 1000 + ms;
  }
  return last;
}

// Time from `back_ms` to the first "redis restored" line after it, in ms; -1 when none.
std::int64_t recovery_ms(const std::filesystem::path& log, std::int64_t back_ms) {
  for (const auto& line : lines_with(log, "redis restored")) {
    const auto t = testing::log_time_ms(line);
    if (t && *t >= back_ms - 2000) return *t - back_ms;
  }
  return -1;
}

TEST(RedisOutage, EveryServiceRidesThroughAKillAndAPauseAndTheJobLosesNothing) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  const auto dir = testing::make_temp_dir("spotlight-outage");
  constexpr int kIterations = 20;
  // The local cluster (tools/cluster): redis-server, reward, planner, two explorers, trainer.
  cluster::ClusterOptions o;
  o.bin_dir = testing::binary_path("services");
  o.redis_server = *testing::RedisServer::find_executable();
  o.redis_appendfsync = "always";  // AOF: what was acknowledged survives a kill
  o.explorers = 2;
  o.run.overrides = settings("outage", dir, kIterations);
  o.run.overrides.push_back("exploration.max_wait_seconds=300");
  cluster::Cluster cluster(o);
  cluster.start();
  const auto log_dir = dir / "run" / "logs";
  process::Process& trainer = *cluster.process("trainer");
  const auto metrics = dir / "run" / "metrics.jsonl";
  const auto wait_for_iteration = [&](std::int64_t k) {
    return testing::wait_for([&] { return last_iteration(metrics) >= k || !trainer.running(); },
                             600s) &&
           trainer.running();
  };

  // 1. SIGKILL, back after 5 s (AOF replayed).
  ASSERT_TRUE(wait_for_iteration(1)) << cluster.log_tail("trainer");
  const std::int64_t killed_at = last_iteration(metrics);
  const std::int64_t kill_ms = spotlight::clock::unix_ms();
  cluster.process("redis")->signal(SIGKILL);
  cluster.process("redis")->wait();
  std::this_thread::sleep_for(5s);  // the fault's length, not a synchronisation
  cluster.restart("redis");         // same port and AOF; returns once it answers PING
  const std::int64_t ping_ms = spotlight::clock::unix_ms();
  // Back = when it accepted connections again (its log), else when it answered our PING.
  const std::int64_t back_ms = redis_ready_ms(log_dir / "redis.log").value_or(ping_ms);

  // 2. SIGSTOP for 15 s (connections hang, commands time out), once the job moved on and every
  // service that noticed the kill has logged its recovery: a pause that starts while a busy
  // explorer has not yet retried would merge the two faults into one outage in its log.
  // The trainer is held (SIGSTOP) until the pause has begun: once Redis is back, the micro job's
  // iterations take milliseconds, and a job that finished before the pause left the planner and
  // the explorers nothing to ride through (they exit on a finished run; seen once in a clean
  // clone: iterations 2 to 10 within 0.2 s, the run over as the pause began).
  ASSERT_TRUE(wait_for_iteration(killed_at + 2)) << cluster.log_tail("trainer");
  trainer.signal(SIGSTOP);
  ASSERT_LT(last_iteration(metrics), kIterations - 1) << "the job finished before the pause";
  for (const auto* log : {"planner.log", "explorer-1.log", "explorer-2.log"}) {
    ASSERT_TRUE(testing::wait_for(
        [&] {
          return lines_with(log_dir / log, "redis lost").size() ==
                 lines_with(log_dir / log, "redis restored").size();
        },
        120s))
        << log << " did not recover from the kill";
  }
  const std::int64_t pause_ms = spotlight::clock::unix_ms();
  cluster.process("redis")->signal(SIGSTOP);
  trainer.signal(SIGCONT);  // it meets the pause too
  std::this_thread::sleep_for(15s);
  cluster.process("redis")->signal(SIGCONT);
  const std::int64_t resume_ms = spotlight::clock::unix_ms();

  const auto status = trainer.wait_for(600s);
  ASSERT_TRUE(status.has_value()) << "trainer did not finish\n" << cluster.log_tail("trainer");
  ASSERT_TRUE(status->success()) << status->describe() << "\n" << cluster.log_tail("trainer");
  for (const char* name : {"planner", "explorer-1", "explorer-2"}) {
    const auto s = cluster.process(name)->wait_for(60s);
    ASSERT_TRUE(s.has_value()) << cluster.log_tail(name);
    EXPECT_TRUE(s->success()) << s->describe() << "\n" << cluster.log_tail(name);
  }
  const auto reward = cluster.process("reward")->terminate(30s);
  EXPECT_TRUE(reward.status.success() && !reward.escalated) << cluster.log_tail("reward");

  // Nothing lost, nothing counted twice, every iteration trained once and in order.
  redis::RedisOptions redis_options;
  redis_options.port = cluster.redis_port();
  queue::RedisLeaseQueue queue(redis_options, run::explore_queue_options([&] {
                                 config::ConfigSources s;
                                 s.overrides = {"run.id=outage"};
                                 return config::Config::load(job::run_schema(), s);
                               }()));
  const auto stats = queue.stats();
  EXPECT_EQ(stats.leased, 0);
  EXPECT_EQ(stats.dead_letters, 0);
  EXPECT_EQ(stats.results, stats.acked_total);
  EXPECT_EQ(stats.results, kIterations * kPrompts * kCandidates);
  std::vector<std::int64_t> expected{-1};
  for (int k = 0; k < kIterations; ++k)
    expected.push_back(k);
  EXPECT_EQ(trained_iterations(metrics), expected);

  // One line per change of state, not one per attempt; every outage seen ends.
  const std::vector<std::pair<std::string, std::filesystem::path>> logs{
      {"trainer", log_dir / "trainer.log"},
      {"planner", log_dir / "planner.log"},
      {"explorer-1", log_dir / "explorer-1.log"},
      {"explorer-2", log_dir / "explorer-2.log"}};
  for (const auto& [name, log] : logs) {
    const auto lost = lines_with(log, "redis lost").size();
    const auto restored = lines_with(log, "redis restored").size();
    EXPECT_EQ(lost, restored) << name;
    EXPECT_LE(lines_with(log, " WARN ").size(), 6 * lost + 4) << name << ": too many warnings";
    if (name != "trainer") {
      EXPECT_GE(lost, 2u) << name << " polls Redis and must see both";
    }
    if (name.starts_with("explorer")) {
      // An explorer learns that the run finished only from Redis, so it says Redis was restored
      // before it exits, whether the run ended during the pause or after it.
      const auto lines = testing::read_lines(log);
      std::optional<std::size_t> last_restored, finished;
      for (std::size_t i = 0; i < lines.size(); ++i) {
        if (lines[i].find("redis restored") != std::string::npos) last_restored = i;
        if (lines[i].find("run finished") != std::string::npos) finished = i;
      }
      EXPECT_TRUE(finished.has_value()) << name << " did not see the run finish";
      EXPECT_TRUE(finished && last_restored && *last_restored < *finished)
          << name << " exited before saying Redis was restored";
    }
  }

  // The figures (printed, not asserted: wall times on a shared machine).
  std::printf(
      "Redis SIGKILL at %lld, accepting connections again at +%lld ms (PING answered at +%lld "
      "ms); SIGSTOP at %lld for %lld ms\n",
      static_cast<long long>(kill_ms), static_cast<long long>(back_ms - kill_ms),
      static_cast<long long>(ping_ms - kill_ms), static_cast<long long>(pause_ms),
      static_cast<long long>(resume_ms - pause_ms));
  for (const auto& [name, log] : logs) {
    std::printf("  %-10s recovery after the kill: %lld ms, after the pause: %lld ms\n",
                name.c_str(), static_cast<long long>(recovery_ms(log, back_ms)),
                static_cast<long long>(recovery_ms(log, resume_ms)));
  }
  std::printf("  trainer timeline (s since the kill):\n");
  for (const auto& line : testing::read_lines(log_dir / "trainer.log")) {
    const bool interesting =
        line.find(" iter ") != std::string::npos || line.find("redis ") != std::string::npos;
    const auto t = testing::log_time_ms(line);
    if (interesting && t && *t >= kill_ms - 10000) {
      std::printf("    %+8.1f  %s\n", (*t - kill_ms) / 1000.0,
                  line.substr(line.find(" trainer ") + 9, 110).c_str());
    }
  }
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

TEST(RedisOutage, TheTrainerStopsAfterItsOutageLimitWaitsWhenStartedWithoutRedisAndResumes) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  testing::RedisServer redis;
  const auto dir = testing::make_temp_dir("spotlight-outage-limit");
  constexpr int kIterations = 4;
  // The trainer alone: no explorers, so every prompt falls back to random seeds after 0.2 s.
  const auto args = plus(run_args("limit", dir, redis.port(), kIterations),
                         {"--set", "exploration.max_wait_seconds=0.2", "--set",
                          "trainer.redis_outage_limit_seconds=3", "train"});
  const auto metrics = dir / "run" / "metrics.jsonl";
  {
    Process trainer(testing::binary_path("services/trainer/spotlight-trainer"), args,
                    dir / "trainer-1.log");
    ASSERT_TRUE(testing::wait_for(
        [&] { return last_iteration(metrics) >= 0 || !trainer.running(); }, 300s));
    redis.kill();
    const auto status = trainer.wait(120s);
    ASSERT_TRUE(status.has_value()) << "still waiting after the limit\n" << trainer.log_tail();
    EXPECT_EQ(*status, service::kExitOutageLimit) << trainer.log_tail();
    const auto errors = lines_with(dir / "trainer-1.log", " ERROR ");
    ASSERT_EQ(errors.size(), 1u) << trainer.log_tail();
    EXPECT_NE(errors[0].find("longer than the limit"), std::string::npos) << errors[0];
    EXPECT_NE(errors[0].find("a restart resumes at iteration"), std::string::npos) << errors[0];
  }
  // Restarted while Redis is still down, it waits (it used to abort again), and goes on once
  // Redis is back.
  Process trainer(testing::binary_path("services/trainer/spotlight-trainer"),
                  plus(args, {"--set", "trainer.redis_outage_limit_seconds=120"}),
                  dir / "trainer-2.log");
  ASSERT_TRUE(testing::wait_for(
      [&] {
        return !lines_with(dir / "trainer-2.log", "redis lost").empty() || !trainer.running();
      },
      300s));
  ASSERT_TRUE(trainer.running()) << trainer.log_tail();
  redis.start();
  ASSERT_EQ(trainer.wait(300s), std::optional<int>(0)) << trainer.log_tail();
  EXPECT_EQ(lines_with(dir / "trainer-2.log", "redis restored").size(), 1u) << trainer.log_tail();
  std::vector<std::int64_t> expected{-1};
  for (int k = 0; k < kIterations; ++k)
    expected.push_back(k);
  EXPECT_EQ(trained_iterations(metrics), expected);
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

TEST(RedisAuth, AWrongPasswordStopsEveryServiceAtOnceWithOneLine) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  testing::RedisServerOptions options;
  options.appendonly = false;
  options.password = "the-right-one";
  testing::RedisServer redis(options);
  const auto dir = testing::make_temp_dir("spotlight-auth");
  const auto args = run_args("auth", dir, redis.port(), 2);
  const std::string secret = "not-the-password-1234";
  ::setenv("SPOTLIGHT_REDIS_PASSWORD", secret.c_str(), 1);  // inherited by the children only
  std::vector<std::pair<std::string, Process>> services;
  services.emplace_back("trainer",
                        Process(testing::binary_path("services/trainer/spotlight-trainer"),
                                plus(args, {"train"}), dir / "trainer.log"));
  services.emplace_back("planner",
                        Process(testing::binary_path("services/planner/spotlight-planner"), args,
                                dir / "planner.log"));
  services.emplace_back("explorer",
                        Process(testing::binary_path("services/explorer/spotlight-explorer"), args,
                                dir / "explorer.log"));
  ::unsetenv("SPOTLIGHT_REDIS_PASSWORD");
  for (auto& [name, process] : services) {
    const auto status = process.wait(120s);
    ASSERT_TRUE(status.has_value()) << name << " retries a wrong password\n" << process.log_tail();
    EXPECT_EQ(*status, service::kExitAccessDenied) << name << "\n" << process.log_tail();
    const auto log = dir / (name + ".log");
    const auto errors = lines_with(log, " ERROR ");
    ASSERT_EQ(errors.size(), 1u) << process.log_tail();
    EXPECT_NE(errors[0].find("WRONGPASS"), std::string::npos) << errors[0];
    EXPECT_NE(errors[0].find("SPOTLIGHT_REDIS_PASSWORD"), std::string::npos) << errors[0];
    EXPECT_TRUE(lines_with(log, " WARN ").empty()) << process.log_tail();
    EXPECT_TRUE(lines_with(log, secret).empty()) << "the password is in the log";
  }
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spotlight
