// The launcher with services: a real redis-server (AOF, a free loopback port) and stand-ins for
// reward, planner and explorers, pinned to the spot CPUs; the trainer gets the endpoints; stop()
// ends what does not exit by itself.
#include <csignal>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/process/proc_stat.hpp"
#include "common/redis/client.hpp"
#include "common/redis/errors.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/tools/cluster/fake_services.hpp"
#include "tools/cluster/cluster.hpp"

namespace spotlight::cluster {
namespace {

using namespace std::chrono_literals;
using testing::read_text;

TEST(ClusterServices, StartsRedisAndTheServicesPinnedAndStopsThemAfterTheTrainer) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  const auto dir = testing::make_temp_dir("spotlight-cluster-services");
  const auto cpus = process::affinity_of(0);
  ASSERT_FALSE(cpus.empty());
  ClusterOptions o;
  // The trainer checks that Redis answers on the port it was given before it exits.
  o.bin_dir = testing::write_fake_services(
      dir / "bin", {.trainer = "for a; do case \"$a\" in redis.port=*) p=${a#redis.port=};; esac; "
                               "done; redis-cli -p \"$p\" ping"});
  o.run.overrides = {"run.dir=" + (dir / "run").string(), "run.id=t", "exploration.mode=async"};
  o.explorers = 2;
  o.trainer.cpus = {cpus.front()};
  o.spot.cpus = {cpus.back()};
  o.drain_timeout = 100ms;  // the stand-ins never exit by themselves
  o.grace = 5s;
  o.redis_server = *testing::RedisServer::find_executable();
  Cluster cluster(o);
  ASSERT_TRUE(cluster.has_services());
  cluster.start();
  ASSERT_GT(cluster.redis_port(), 0);
  redis::RedisOptions ro;
  ro.port = cluster.redis_port();
  EXPECT_NO_THROW(redis::RedisClient(ro).ping());
  EXPECT_TRUE(cluster.wait_trainer().success());
  cluster.stop();

  const auto log = [&](const std::string& name) {
    return read_text(cluster.run_dir() / "logs" / (name + ".log"));
  };
  EXPECT_NE(log("trainer").find("PONG"), std::string::npos) << log("trainer");
  EXPECT_NE(log("trainer").find("reward.endpoint=tcp://127.0.0.1:"), std::string::npos);
  EXPECT_NE(log("trainer").find("bus.trainer_endpoint=tcp://127.0.0.1:"), std::string::npos);
  EXPECT_NE(log("explorer-2").find("explorer.id=explorer-2"), std::string::npos);
  EXPECT_NE(log("explorer-2").find("run.threads=1"), std::string::npos);
  EXPECT_NE(log("reward").find("reward.bind=tcp://127.0.0.1:"), std::string::npos);
  EXPECT_EQ(log("planner").find("run.threads"), std::string::npos) << "the planner has no threads";
  EXPECT_TRUE(std::filesystem::exists(cluster.run_dir() / "redis" / "appendonlydir") ||
              std::filesystem::exists(cluster.run_dir() / "redis" / "appendonly.aof"))
      << "redis runs with AOF in the run directory";

  const auto manifest = nlohmann::json::parse(read_text(cluster.write_manifest()));
  EXPECT_EQ(manifest["version"], 1);
  EXPECT_EQ(manifest["mode"], "async");
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& p : manifest["processes"])
    by_name[p["name"].get<std::string>()] = p;
  ASSERT_EQ(by_name.size(), 6u) << manifest.dump(1);
  for (const auto& [name, p] : by_name) {
    const std::string want = std::to_string(name == "trainer" ? cpus.front() : cpus.back());
    EXPECT_EQ(p["cpus"], want) << name;
    EXPECT_EQ(p["cpus_allowed"], want) << name;
    EXPECT_NE(p["exit"], nullptr) << name << " was not reaped";
    EXPECT_GE(p["cpu_seconds"].get<double>(), 0.0);
  }
  EXPECT_EQ(by_name["trainer"]["stopped_by"], "exited");
  EXPECT_EQ(by_name["redis"]["stopped_by"], "sigterm");
  EXPECT_EQ(by_name["redis"]["exit_code"], 0) << "redis shuts down cleanly on SIGTERM";
  EXPECT_EQ(by_name["planner"]["stopped_by"], "sigterm");
  EXPECT_EQ(by_name["planner"]["signal"], SIGTERM);
  std::filesystem::remove_all(dir);
}

// Planner and explorers exit by themselves only on a finished job, so after a stop request (a
// Ctrl-C on the demo) stop() terminates them at once instead of waiting drain_timeout first.
TEST(ClusterServices, AfterAStopRequestTheServicesAreTerminatedWithoutWaitingForTheDrain) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  const auto dir = testing::make_temp_dir("spotlight-cluster-stop");
  ClusterOptions o;
  o.bin_dir = testing::write_fake_services(
      dir / "bin", {.trainer = "exec sleep 600", .services = "exec sleep 600"});
  o.run.overrides = {"run.dir=" + (dir / "run").string(), "run.id=s", "exploration.mode=async"};
  o.explorers = 1;
  o.drain_timeout = 90s;  // waiting for it would show here (the test's timeout is 120 s)
  o.grace = 5s;
  o.redis_server = *testing::RedisServer::find_executable();
  Cluster cluster(o);
  cluster.start();
  std::stop_source stop;
  stop.request_stop();
  EXPECT_EQ(cluster.wait_trainer(stop.get_token()).signal, SIGTERM);
  const auto start = std::chrono::steady_clock::now();
  cluster.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 60s) << "stop() waited for the drain";
  const auto manifest = nlohmann::json::parse(read_text(cluster.write_manifest()));
  for (const auto& p : manifest["processes"]) {
    EXPECT_EQ(p["stopped_by"], "sigterm") << p.dump();
  }
  std::filesystem::remove_all(dir);
}

// The hooks end-to-end tests use: Redis first and alone (to be written to before any service
// runs), with more arguments (a password) that the readiness probe logs in through; a reward
// server of the test's own; each role's environment (its Redis credentials).
TEST(ClusterServices, StartsRedisAloneFirstWithItsArgumentsThenTheRestWithEachRolesEnvironment) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  const auto dir = testing::make_temp_dir("spotlight-cluster-hooks");
  ClusterOptions o;
  // Each stand-in prints the user it was given; the trainer reads the key the test wrote.
  o.bin_dir = testing::write_fake_services(
      dir / "bin",
      {.trainer = "echo \"user=$SPOTLIGHT_REDIS_USER\"; for a; do case \"$a\" in redis.port=*) "
                  "p=${a#redis.port=};; esac; done; redis-cli -p \"$p\" -a pw --no-auth-warning "
                  "get prepared",
       .services = "echo \"user=$SPOTLIGHT_REDIS_USER\"; exec sleep 60"});
  o.run.overrides = {"run.dir=" + (dir / "run").string(), "run.id=h", "exploration.mode=async"};
  o.explorers = 1;
  o.drain_timeout = 100ms;
  o.grace = 5s;
  o.redis_server = *testing::RedisServer::find_executable();
  o.redis_args = {"--requirepass", "pw"};
  o.redis_password = "pw";
  o.reward_command = {"/bin/sh", "-c", "echo \"bound to {endpoint}\"; exec sleep 60"};
  o.role_env = {{"planner", {{"SPOTLIGHT_REDIS_USER", "planner-user"}}},
                {"explorer", {{"SPOTLIGHT_REDIS_USER", "explorer-user"}}},
                {"trainer", {{"SPOTLIGHT_REDIS_USER", "trainer-user"}}}};
  Cluster cluster(o);
  cluster.start_redis();
  EXPECT_NE(cluster.process("redis"), nullptr);
  EXPECT_EQ(cluster.process("planner"), nullptr) << "only Redis runs after start_redis()";
  EXPECT_EQ(cluster.process("trainer"), nullptr);
  redis::RedisOptions ro;
  ro.port = cluster.redis_port();
  EXPECT_THROW(redis::RedisClient(ro).ping(), redis::RedisError) << "requirepass was not given";
  ro.password = "pw";
  redis::RedisClient(ro).command({"SET", "prepared", "before-the-services"});
  cluster.start_redis();  // idempotent
  cluster.start();
  EXPECT_TRUE(cluster.wait_trainer().success()) << cluster.log_tail("trainer");
  cluster.stop();

  const auto log = [&](const std::string& name) {
    return read_text(cluster.run_dir() / "logs" / (name + ".log"));
  };
  EXPECT_NE(log("trainer").find("before-the-services"), std::string::npos) << log("trainer");
  EXPECT_NE(log("trainer").find("user=trainer-user"), std::string::npos) << log("trainer");
  EXPECT_NE(log("planner").find("user=planner-user"), std::string::npos) << log("planner");
  EXPECT_NE(log("explorer-1").find("user=explorer-user"), std::string::npos) << log("explorer-1");
  const auto manifest = nlohmann::json::parse(read_text(cluster.write_manifest()));
  const std::string endpoint =
      "tcp://127.0.0.1:" + std::to_string(manifest["endpoints"]["reward_port"].get<int>());
  EXPECT_NE(log("reward").find("bound to " + endpoint), std::string::npos) << log("reward");
  EXPECT_NE(log("trainer").find("reward.endpoint=" + endpoint), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(ClusterServices, RedisAloneNeedsARunWithServices) {
  const auto dir = testing::make_temp_dir("spotlight-cluster-services");
  ClusterOptions o;
  o.bin_dir = testing::write_fake_services(dir / "bin", {});
  o.run.overrides = {"run.dir=" + (dir / "run").string(), "exploration.mode=none"};
  Cluster cluster(o);
  EXPECT_THROW(cluster.start_redis(), ClusterError);
  std::filesystem::remove_all(dir);
}

TEST(ClusterServices, AMissingRedisServerIsAClearErrorAndLeavesNothingRunning) {
  const auto dir = testing::make_temp_dir("spotlight-cluster-services");
  ClusterOptions o;
  o.bin_dir = testing::write_fake_services(dir / "bin", {});
  o.run.overrides = {"run.dir=" + (dir / "run").string(), "exploration.mode=async"};
  o.redis_server = (dir / "no-redis-server").string();
  Cluster cluster(o);
  try {
    cluster.start();
    FAIL() << "started without a redis-server";
  } catch (const process::ProcessError& e) {
    EXPECT_NE(std::string(e.what()).find("no-redis-server"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cluster.process("planner"), nullptr) << "nothing after redis was started";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spotlight::cluster
