// The launcher with the real service binaries: a short async job (micro model, fresh weights)
// with the trainer on one CPU and redis, reward, planner and an explorer on another. The job must
// finish, planner and explorer must exit by themselves, every process must have run on its CPU
// set (as the kernel reported it) and have its CPU seconds in the manifest.
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/process/proc_stat.hpp"
#include "tests/support/process.hpp"
#include "tools/cluster/cluster.hpp"

namespace spotlight::cluster {
namespace {

using namespace std::chrono_literals;

TEST(ClusterJob, AnAsyncJobRunsPinnedAndEndsCleanly) {
  const auto dir = testing::make_temp_dir("spotlight-cluster-e2e");
  const auto cpus = process::affinity_of(0);
  ASSERT_FALSE(cpus.empty());
  ClusterOptions o;
  o.bin_dir = testing::binary_path("services");
  o.run.overrides = {
      "run.dir=" + (dir / "run").string(),
      "run.id=cluster-e2e",
      "exploration.mode=async",
      "model.preset=micro",
      "trainer.iterations=3",
      "trainer.prompts_per_iteration=2",
      "trainer.group_size=2",
      "trainer.micro_batch=4",
      "exploration.candidates=4",
      "exploration.max_wait_seconds=120",
      "sampler.steps=4",
      "validation.every=3",
      "validation.prompts=4",
      "validation.steps=4",
      "audit.every=0",
      "explorer.batch=4",
      "explorer.heartbeat_ms=200",
      "planner.poll_ms=50",
  };
  o.explorers = 1;
  o.trainer.cpus = {cpus.front()};
  o.spot.cpus = {cpus.back()};
  o.drain_timeout = 60s;
  Cluster cluster(o);
  cluster.start();
  const auto status = cluster.wait_trainer();
  cluster.stop();
  const auto manifest_path = cluster.write_manifest();
  std::ifstream trainer_log(cluster.run_dir() / "logs" / "trainer.log");
  ASSERT_TRUE(status.success()) << status.describe() << "\n" << trainer_log.rdbuf();

  std::ifstream metrics(cluster.run_dir() / "metrics.jsonl");
  int iterations = 0;
  for (std::string line; std::getline(metrics, line);)
    iterations += nlohmann::json::parse(line)["iteration"].get<int>() >= 0 ? 1 : 0;
  EXPECT_EQ(iterations, 3);

  const auto manifest = nlohmann::json::parse(std::ifstream(manifest_path));
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& p : manifest["processes"])
    by_name[p["name"].get<std::string>()] = p;
  ASSERT_EQ(by_name.size(), 5u) << manifest.dump(1);
  for (const auto& [name, p] : by_name) {
    const std::string want = std::to_string(name == "trainer" ? cpus.front() : cpus.back());
    EXPECT_EQ(p["cpus_allowed"], want) << name;
    EXPECT_NE(p["exit"], nullptr) << name;
  }
  // Planner and explorer stop by themselves once the trainer is done; reward and redis are
  // stopped by the launcher, cleanly.
  for (const std::string name : {"trainer", "planner", "explorer-1"}) {
    EXPECT_EQ(by_name[name]["stopped_by"], "exited") << name;
    EXPECT_EQ(by_name[name]["exit_code"], 0) << name;
  }
  for (const std::string name : {"reward", "redis"}) {
    EXPECT_EQ(by_name[name]["stopped_by"], "sigterm") << name;
  }
  EXPECT_EQ(by_name["trainer"]["threads"], 1);
  EXPECT_GT(by_name["trainer"]["cpu_seconds"].get<double>(), 0.0);
  EXPECT_GT(by_name["explorer-1"]["cpu_seconds"].get<double>(), 0.0) << "the explorer explored";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spotlight::cluster
