// The soak's CI variant: a short async job on the micro model with every fault kind of the long
// soak (scripts/chaos-bench --soak) -- trace-driven preemptions (SIGTERM + grace and SIGKILL, in
// bursts), redis-server SIGKILLed twice and SIGSTOPped twice, the trainer SIGKILLed twice, once
// restarted on a full disk -- and the soak's audit: nothing lost, nothing double-counted, every
// iteration trained once, no process exiting on its own.
#include "tools/soak/soak.hpp"

#include <cstdlib>
#include <iostream>

#include <gtest/gtest.h>

#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"

namespace spotlight {
namespace {

using namespace std::chrono_literals;

TEST(Soak, EveryFaultKindAtOnceLosesNothingCountsNothingTwiceAndTrainsEachIterationOnce) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  const char* source = std::getenv("SPOTLIGHT_SOURCE_DIR");
  if (source == nullptr) GTEST_SKIP() << "SPOTLIGHT_SOURCE_DIR is not set (run through ctest)";
  const auto dir = testing::make_temp_dir("spotlight-soak");
  soak::SoakOptions o;
  o.bin_dir = testing::binary_path("services");
  o.chaos_bin = testing::binary_path("tools/chaos/spotlight-chaos");
  // A stretch of the AWS trace with drops of 3 of 4 explorers; a tick every 0.25 s.
  o.trace = std::filesystem::path(source) / "deploy/traces" /
            "availability_16-node_aws-08-27-2023_us-west-2a_v100_1.json";
  o.time_scale = 1200;
  o.max_explorers = 4;
  o.min_explorers = 1;
  o.start_tick = 4599;
  o.grace_seconds = 5;
  o.redis_kills = 2;
  o.redis_pauses = 2;
  o.trainer_kills = 2;
  o.disk_full = 1;
  o.fault_shim = SPOTLIGHT_FAULT_FS_LIBRARY;
  o.redis_down = 2s;
  o.redis_pause = 3s;
  o.min_preemptions = 10;
  o.job_timeout = 480s;
  o.echo = &std::cout;
  constexpr int kIterations = 14;
  o.run.overrides = {"run.id=soak",
                     "run.dir=" + (dir / "run").string(),
                     "run.threads=1",
                     "model.preset=micro",
                     "exploration.mode=async",
                     "exploration.candidates=6",
                     "exploration.max_wait_seconds=300",
                     "exploration.lease_timeout_ms=5000",
                     "exploration.max_deliveries=100",
                     "trainer.iterations=" + std::to_string(kIterations),
                     "trainer.prompts_per_iteration=2",
                     "trainer.group_size=4",
                     "trainer.micro_batch=4",
                     "sampler.steps=4",
                     "validation.prompts=4",
                     "validation.steps=3",
                     "validation.every=100",
                     "audit.every=0",
                     "explorer.batch=4",
                     "explorer.heartbeat_ms=200",
                     "explorer.grace_seconds=5",
                     "planner.poll_ms=50"};
  const soak::SoakReport r = soak::run_soak(o);
  std::cout << "[ info     ] soak: " << r.to_json() << "\n";
  for (const auto& failure : r.failures)
    ADD_FAILURE() << failure;
  EXPECT_EQ(r.redis_kills, 2);
  EXPECT_EQ(r.redis_pauses, 2);
  EXPECT_EQ(r.trainer_kills, 2);
  EXPECT_EQ(r.disk_full, 1);
  EXPECT_GE(r.preempt_term, 1);
  EXPECT_GE(r.preempt_kill, 1);
  EXPECT_GE(r.half_pool_bursts, 1) << "no correlated burst of half the pool";
  EXPECT_EQ(r.tasks_scheduled, kIterations * 2 * 6);
  EXPECT_EQ(r.tasks_lost, 0);
  EXPECT_EQ(r.double_counted, 0);
  EXPECT_TRUE(r.iterations_trained_once);
  if (!::testing::Test::HasFailure() && std::getenv("SPOTLIGHT_KEEP_TEST_DIR") == nullptr) {
    std::filesystem::remove_all(dir);
  }
}

}  // namespace
}  // namespace spotlight
