// The launcher's mechanics with stand-in service programs (no LibTorch, no Redis): command line,
// the base checkpoint's cache key and pretraining, pinning and threads of the trainer, its output
// echoed, exit statuses, a stop request, and the manifest.
#include "tools/cluster/cluster.hpp"

#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "common/config/error.hpp"
#include "common/process/proc_stat.hpp"
#include "common/run/run_config.hpp"
#include "tests/support/process.hpp"
#include "tests/support/wait_for.hpp"
#include "tests/tools/cluster/fake_services.hpp"
#include "tools/cluster/base_model.hpp"
#include "tools/cluster/command_line.hpp"
#include "tools/cluster/launcher.hpp"

namespace spotlight::cluster {
namespace {

using namespace std::chrono_literals;
using testing::read_text;

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::make_temp_dir("spotlight-cluster"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  ClusterOptions options(const testing::FakeServices& fake, const std::string& mode = "none") {
    ClusterOptions o;
    o.bin_dir = testing::write_fake_services(dir_ / "bin", fake);
    o.run.overrides = {"run.dir=" + (dir_ / "run").string(), "run.id=t",
                       "exploration.mode=" + mode};
    o.drain_timeout = 100ms;
    o.grace = 2s;
    return o;
  }

  std::filesystem::path dir_;
};

int last_cpu() {
  const auto cpus = process::affinity_of(0);
  return cpus.empty() ? 0 : cpus.back();
}

TEST(LauncherCommandLine, ParsesFlagsAndPassesTheRunSettingsThrough) {
  const auto o =
      parse_launcher_command_line({"--explorers", "3", "--trainer-cpus=0", "--spot-cpus", "1-2",
                                   "--trainer-threads", "1", "--set", "trainer.lr=1e-4", "--config",
                                   "r.yaml", "--services", "no", "--quiet", "--grace-ms", "500"},
                                  "/opt/spotlight/build/tools/cluster/spotlight-cluster");
  EXPECT_EQ(o.cluster.explorers, 3);
  EXPECT_EQ(o.cluster.trainer.cpus, std::vector<int>{0});
  EXPECT_EQ(o.cluster.spot.cpus, (std::vector<int>{1, 2}));
  EXPECT_EQ(o.cluster.trainer.threads, 1);
  EXPECT_EQ(o.cluster.run.overrides, std::vector<std::string>{"trainer.lr=1e-4"});
  ASSERT_TRUE(o.cluster.run.file.has_value());
  EXPECT_EQ(o.cluster.run.file->filename(), "r.yaml");
  EXPECT_EQ(o.cluster.services, std::optional<bool>(false));
  EXPECT_TRUE(o.quiet);
  EXPECT_EQ(o.cluster.grace, 500ms);
  EXPECT_EQ(o.cluster.bin_dir.lexically_normal(), "/opt/spotlight/build/services");
}

TEST(LauncherCommandLine, RejectsWhatItDoesNotUnderstandNamingTheFlag) {
  const auto rejects = [](std::vector<std::string> args, const std::string& needle) {
    try {
      parse_launcher_command_line(args, "spotlight-cluster");
      ADD_FAILURE() << "accepted " << ::testing::PrintToString(args);
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  rejects({"--bogus"}, "--bogus");
  rejects({"--trainer-cpus", "0-"}, "--trainer-cpus");
  rejects({"--explorers", "-1"}, "--explorers");
  rejects({"--explorers"}, "needs a value");
  rejects({"--set", "trainer.lr"}, "KEY=VALUE");
  rejects({"--services", "maybe"}, "--services");
  rejects({"--base", "a", "--base-cache", "b"}, "one of them");
  rejects({"--config", "a", "--config", "b"}, "twice");
}

TEST(LauncherCommandLine, HarnessCommandsExpandTheServiceArgumentsQuotedForTheShell) {
  const auto o = parse_launcher_command_line(
      {"--driver", "drive {service-args}", "--driver-stops-job", "--after", "count {redis-port}"},
      "spotlight-cluster");
  EXPECT_EQ(o.driver, "drive {service-args}");
  EXPECT_TRUE(o.driver_stops_job);
  EXPECT_EQ(o.cluster.stop_with, "driver");
  EXPECT_EQ(o.after, "count {redis-port}");
  EXPECT_EQ(expand_command("x {service-args} -p {redis-port}", {"--set", "a=it's b"}, 6390),
            "x '--set' 'a=it'\\''s b' -p 6390");
  EXPECT_THROW(parse_launcher_command_line({"--driver-stops-job"}, "spotlight-cluster"),
               std::invalid_argument);
}

TEST_F(ClusterTest, EnsureBaseAsksTheTrainerForTheRecipesBaseAndUsesThePathItPrints) {
  testing::FakeServices fake;
  // A stand-in trainer that owns the cache as the real one does (services/trainer: pretrain
  // with pretrain.cache_dir): reuses or writes the base, prints its path last.
  fake.trainer =
      "for a; do case \"$a\" in pretrain.cache_dir=*) d=\"${a#pretrain.cache_dir=}\";; esac; done; "
      "f=\"$d/base-fake.safetensors\"; "
      "if [ -f \"$f\" ]; then echo \"using the cached base model $f\"; else echo w > \"$f\"; fi; "
      "echo \"$f\"";
  BaseOptions b;
  b.cache_dir = dir_ / "cache";
  b.trainer_binary =
      testing::write_fake_services(dir_ / "bin", fake) / "trainer" / "spotlight-trainer";
  b.run.overrides = {"model.preset=micro"};
  b.placement.cpus = {last_cpu()};
  b.log = dir_ / "pretrain.log";
  std::ostringstream notes;
  b.echo = &notes;
  const auto path = ensure_base(b).value();
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_EQ(path.parent_path(), std::filesystem::absolute(b.cache_dir));
  const std::string log = read_text(b.log);
  EXPECT_NE(log.find("argv: pretrain"), std::string::npos) << log;
  EXPECT_NE(log.find("run.threads=1"), std::string::npos) << "threads follow the CPU set: " << log;
  EXPECT_NE(log.find("pretrain.cache_dir=" + std::filesystem::absolute(b.cache_dir).string()),
            std::string::npos)
      << log;
  EXPECT_NE(notes.str().find("the base model"), std::string::npos) << notes.str();
  EXPECT_EQ(ensure_base(b), path);
  EXPECT_NE(notes.str().find("using the cached base model"), std::string::npos) << notes.str();

  fake.trainer = "exit 1";
  b.trainer_binary =
      testing::write_fake_services(dir_ / "bin", fake) / "trainer" / "spotlight-trainer";
  EXPECT_THROW(ensure_base(b), ClusterError);
  fake.trainer = "echo no path here";
  b.trainer_binary =
      testing::write_fake_services(dir_ / "bin", fake) / "trainer" / "spotlight-trainer";
  EXPECT_THROW(ensure_base(b), ClusterError) << "a trainer that printed no path";
}

// A Ctrl-C during the first run's pretraining (minutes on the demo) ends the pretraining, and the
// launcher starts nothing after it. Before, both waited for the pretraining to finish.
TEST_F(ClusterTest, AStopRequestDuringPretrainingEndsItAndStartsNothing) {
  LauncherOptions o;
  o.cluster = options({.trainer = "exec sleep 600"}, "async");
  o.base_cache = dir_ / "cache";
  o.quiet = true;
  std::stop_source stop;
  std::jthread stopper([&] {
    // Once the pretraining runs (its log shows the stand-in's argv), ask to stop.
    const auto log = dir_ / "run" / "logs" / "pretrain.log";
    testing::wait_for([&] { return read_text(log).find("argv: pretrain") != std::string::npos; },
                      30s);
    stop.request_stop();
  });
  EXPECT_EQ(run_launcher(o, stop.get_token()), 128 + SIGTERM);
  EXPECT_TRUE(std::filesystem::is_empty(dir_ / "cache"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "run" / "cluster.json")) << "nothing was started";
  EXPECT_FALSE(std::filesystem::exists(dir_ / "run" / "logs" / "trainer.log"));
}

TEST_F(ClusterTest, RunsThePinnedTrainerAloneEchoesItAndRecordsIt) {
  auto o = options({});
  const int cpu = last_cpu();
  o.trainer.cpus = {cpu};
  std::ostringstream echo;
  o.echo = &echo;
  Cluster cluster(o);
  EXPECT_FALSE(cluster.has_services()) << "mode none runs the trainer alone";
  cluster.start();
  const auto status = cluster.wait_trainer();
  EXPECT_TRUE(status.success()) << status.describe();
  cluster.stop();
  const std::string out = echo.str();
  EXPECT_NE(out.find("argv: train --set run.dir="), std::string::npos) << out;
  EXPECT_NE(out.find("run.threads=1"), std::string::npos) << out;
  EXPECT_NE(out.find("Cpus_allowed_list:\t" + std::to_string(cpu)), std::string::npos) << out;
  EXPECT_EQ(out.find("redis.port"), std::string::npos) << "no services, no endpoints: " << out;

  const Manifest m = cluster.manifest();
  ASSERT_EQ(m.processes.size(), 1u);
  const ProcessRecord& t = m.processes[0];
  EXPECT_EQ(t.role, "trainer");
  EXPECT_EQ(t.cpus, std::vector<int>{cpu});
  EXPECT_EQ(t.cpus_allowed, std::vector<int>{cpu});
  EXPECT_EQ(t.threads, 1);
  EXPECT_EQ(t.stopped_by, "exited");
  ASSERT_TRUE(t.exit.has_value());
  EXPECT_TRUE(t.exit->success());
  EXPECT_GE(t.cpu.total(), 0.0);
  EXPECT_GT(t.ended_unix_ms, 0);
  const auto path = cluster.write_manifest();
  EXPECT_EQ(path, cluster.run_dir() / "cluster.json");
  const std::string json = read_text(path);
  EXPECT_NE(json.find("\"cpus_allowed\": \"" + std::to_string(cpu) + "\""), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"cpu_seconds\""), std::string::npos);
}

TEST_F(ClusterTest, ReportsAFailingTrainer) {
  Cluster cluster(options({.trainer = "echo boom >&2; exit 3"}));
  cluster.start();
  EXPECT_EQ(cluster.wait_trainer().code, 3);
  EXPECT_NE(read_text(cluster.run_dir() / "logs" / "trainer.log").find("boom"), std::string::npos);
}

TEST_F(ClusterTest, AStopRequestTerminatesTheTrainer) {
  Cluster cluster(options({.trainer = "exec sleep 60"}));
  cluster.start();
  std::stop_source stop;
  stop.request_stop();
  const auto status = cluster.wait_trainer(stop.get_token());
  EXPECT_EQ(status.signal, SIGTERM);
  EXPECT_EQ(cluster.manifest().processes[0].stopped_by, "sigterm");
}

// The harness hooks of spotlight-cluster: a driver beside the job (here it ends the job), and an
// --after command that runs once the trainer has ended, with the service arguments expanded.
TEST_F(ClusterTest, ADriverCanEndTheJobAndTheAfterCommandRunsBeforeTheStop) {
  LauncherOptions o;
  o.cluster = options({.trainer = "exec sleep 60"});
  o.quiet = true;
  o.driver = "echo \"driver saw: {service-args}\"; exit 7";
  o.driver_stops_job = true;
  o.cluster.stop_with = "driver";
  o.after = "echo \"after: $0\" > " + (dir_ / "after.txt").string();
  const int code = run_launcher(o, {});
  EXPECT_EQ(code, 7) << "the driver's verdict is the job's";
  const std::string driver = read_text(dir_ / "run" / "logs" / "driver.log");
  EXPECT_NE(driver.find("driver saw: '--set' 'run.dir="), std::string::npos) << driver;
  EXPECT_NE(read_text(dir_ / "after.txt").find("after: /bin/sh"), std::string::npos);
  const auto manifest = read_text(dir_ / "run" / "cluster.json");
  EXPECT_NE(manifest.find("\"stopped_by\": \"sigterm\""), std::string::npos)
      << "the trainer was stopped: " << manifest;
}

TEST_F(ClusterTest, ABadRunSettingStopsBeforeAnythingStarts) {
  auto o = options({});
  o.run.overrides.push_back("trainer.no_such_key=1");
  try {
    Cluster cluster(o);
    FAIL() << "accepted an unknown key";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("trainer.no_such_key"), std::string::npos);
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "run" / "logs"));
}

}  // namespace
}  // namespace spotlight::cluster

namespace spotlight::cluster {
namespace {

TEST(LauncherCommandLine, TrainerRanksAndTheirCpusMustSplitEvenly) {
  const auto o = parse_launcher_command_line(
      {"--trainer-ranks", "2", "--trainer-cpus", "0-3", "--trainer-restarts", "5"},
      "spotlight-cluster");
  EXPECT_EQ(o.cluster.trainer_ranks, 2);
  EXPECT_EQ(o.cluster.trainer_restarts, 5);
  auto uneven = o.cluster;
  uneven.bin_dir = "/bin";
  uneven.trainer.cpus = {0, 1, 2};
  EXPECT_THROW(uneven.validate(), std::invalid_argument);
  EXPECT_THROW(parse_launcher_command_line({"--trainer-ranks", "0"}, "spotlight-cluster"),
               std::invalid_argument);
}

TEST_F(ClusterTest, TrainerRanksRunPinnedToTheirShareWithTheRendezvousEnvironment) {
  const auto cpus = process::affinity_of(0);
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs to pin two ranks apart";
  auto o = options({.trainer = "echo \"rank=$RANK of $WORLD_SIZE at $MASTER_ADDR:$MASTER_PORT\""});
  o.trainer.cpus = {cpus[0], cpus[1]};
  o.trainer_ranks = 2;
  Cluster cluster(o);
  cluster.start();
  EXPECT_TRUE(cluster.wait_trainer().success());
  cluster.stop();
  ASSERT_EQ(cluster.trainer_names(), (std::vector<std::string>{"trainer", "trainer-1"}));
  for (int rank = 0; rank < 2; ++rank) {
    const auto log = read_text(cluster.run_dir() / "logs" /
                               (cluster.trainer_names()[static_cast<size_t>(rank)] + ".log"));
    EXPECT_NE(log.find("rank=" + std::to_string(rank) + " of 2 at 127.0.0.1:"), std::string::npos)
        << log;
    EXPECT_NE(log.find("trainer.ranks=2"), std::string::npos) << log;
    EXPECT_NE(log.find("run.threads=1"), std::string::npos) << log;
    EXPECT_NE(log.find("Cpus_allowed_list:\t" + std::to_string(cpus[static_cast<size_t>(rank)])),
              std::string::npos)
        << log;
  }
}

// Rank 1 fails once (as a killed rank would, and rank 0's collective after it): the launcher stops
// the group and starts both ranks again.
TEST_F(ClusterTest, AFailedRankRestartsTheWholeTrainerGroup) {
  const auto marker = dir_ / "rank1-failed";
  auto o = options({.trainer = "if [ \"$RANK\" = 1 ] && [ ! -e " + marker.string() +
                               " ]; then touch " + marker.string() + "; exit 9; fi; [ -e " +
                               marker.string() + " ] || exec sleep 60; exit 0"});
  o.trainer_ranks = 2;
  std::ostringstream echo;
  o.echo = &echo;
  Cluster cluster(o);
  cluster.start();
  EXPECT_TRUE(cluster.wait_trainer().success()) << echo.str();
  EXPECT_EQ(cluster.trainer_group_restarts(), 1);
  EXPECT_NE(echo.str().find("trainer-1 failed (exit 9)"), std::string::npos) << echo.str();
  cluster.stop();
  for (const auto& p : cluster.manifest().processes)
    EXPECT_EQ(p.restarts, 1) << p.name;
}

TEST_F(ClusterTest, ARankFailingEveryTimeEndsTheJobWithItsStatusOnceTheRestartsAreSpent) {
  auto o = options({.trainer = "[ \"$RANK\" = 1 ] && exit 9; exec sleep 60"});
  o.trainer_ranks = 2;
  o.trainer_restarts = 2;
  Cluster cluster(o);
  cluster.start();
  EXPECT_EQ(cluster.wait_trainer().code, 9);
  EXPECT_EQ(cluster.trainer_group_restarts(), 2);
}

}  // namespace
}  // namespace spotlight::cluster
