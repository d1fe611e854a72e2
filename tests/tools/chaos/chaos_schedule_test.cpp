// The preemption driver's logic without processes: trace parsing and the per-tick plan.

#include "tools/chaos/chaos_schedule.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <stdexcept>

#include <gtest/gtest.h>

#include "common/config/error.hpp"
#include "tools/chaos/app.hpp"
#include "tools/chaos/trace.hpp"

namespace spotlight::chaos {
namespace {

AvailabilityTrace trace_of(std::vector<int> counts, double gap = 300) {
  AvailabilityTrace t;
  t.gap_seconds = gap;
  t.counts = std::move(counts);
  return t;
}

// Applies a plan to a simulated set of processes (ids in start order); returns the preemptions.
struct Simulation {
  std::vector<std::int64_t> running;
  std::int64_t next = 0;
  std::int64_t terms = 0, kills = 0, starts = 0;
  std::size_t max_burst = 0;

  void apply(const std::vector<Action>& plan) {
    std::size_t burst = 0;
    std::set<std::int64_t> victims;
    for (const auto& a : plan) {
      if (a.kind == ActionKind::kStart) {
        running.push_back(next++);
        ++starts;
        continue;
      }
      ++burst;
      ASSERT_TRUE(victims.insert(a.victim).second) << "victim twice in one tick";
      auto it = std::find(running.begin(), running.end(), a.victim);
      ASSERT_NE(it, running.end()) << "victim is not running";
      running.erase(it);
      (a.kind == ActionKind::kKill ? kills : terms) += 1;
    }
    max_burst = std::max(max_burst, burst);
  }
};

TEST(Trace, ParsesTheDesignFormatAndNamesBadFields) {
  const auto t = parse_trace(R"({"metadata":{"gap_seconds":30},"data":[0,2,2,1,3,0]})");
  EXPECT_EQ(t.gap_seconds, 30);
  EXPECT_EQ(t.counts, (std::vector<int>{0, 2, 2, 1, 3, 0}));
  EXPECT_EQ(t.peak(), 3);
  EXPECT_EQ(t.drops(), 2u);
  EXPECT_EQ(t.lost_instances(), 4u);
  const auto message = [](const char* json) {
    try {
      parse_trace(json);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("not json").find("JSON"), std::string::npos);
  EXPECT_NE(message(R"({"data":[1]})").find("gap_seconds"), std::string::npos);
  EXPECT_NE(message(R"({"metadata":{"gap_seconds":0},"data":[1]})").find("gap_seconds"),
            std::string::npos);
  EXPECT_NE(message(R"({"metadata":{"gap_seconds":1},"data":[1,-2]})").find("data[1]"),
            std::string::npos);
  EXPECT_NE(message(R"({"metadata":{"gap_seconds":1},"data":[]})").find("data"), std::string::npos);
}

TEST(Trace, TheRepositoryTracesLoad) {
  const char* root = std::getenv("SPOTLIGHT_SOURCE_DIR");
  if (root == nullptr) GTEST_SKIP() << "SPOTLIGHT_SOURCE_DIR is not set (run through ctest)";
  const std::filesystem::path dir = std::filesystem::path(root) / "deploy/traces";
  int loaded = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    const auto t = load_trace(entry.path());
    EXPECT_GT(t.peak(), 0) << entry.path();
    EXPECT_GT(t.drops(), 0u) << entry.path();
    ++loaded;
  }
  EXPECT_GE(loaded, 1);
}

TEST(ChaosSchedule, TargetScalesThePeakToMaxExplorers) {
  ChaosSchedule s(trace_of({0, 4, 8, 16, 12, 1}), {.max_explorers = 4});
  EXPECT_EQ(s.target(0), 0);
  EXPECT_EQ(s.target(1), 1);
  EXPECT_EQ(s.target(2), 2);
  EXPECT_EQ(s.target(3), 4);
  EXPECT_EQ(s.target(4), 3);
  EXPECT_EQ(s.target(5), 0);
  EXPECT_EQ(s.target(6), 0);  // wraps around
  EXPECT_EQ(s.target(9), 4);
  ChaosSchedule floor(trace_of({0, 16, 1}), {.max_explorers = 4, .min_explorers = 1});
  EXPECT_EQ(floor.target(0), 1);
  EXPECT_EQ(floor.target(1), 4);
  EXPECT_EQ(floor.target(2), 1);
}

TEST(ChaosSchedule, MatchesTheTraceEveryTickWithBurstsOnDrops) {
  const std::vector<int> counts{0, 4, 4, 1, 3, 3, 0, 4, 2, 4};
  ChaosSchedule s(trace_of(counts), {.max_explorers = 4, .kill_ratio = 0.5, .seed = 3});
  Simulation sim;
  for (std::size_t tick = 0; tick < counts.size(); ++tick) {
    sim.apply(s.plan(tick, sim.running));
    ASSERT_EQ(static_cast<int>(sim.running.size()), counts[tick]) << "tick " << tick;
  }
  // Drops 4->1, 3->0, 4->2: 3 + 3 + 2 preemptions, the largest burst 3.
  EXPECT_EQ(sim.terms + sim.kills, 8);
  EXPECT_EQ(sim.max_burst, 3u);
  EXPECT_EQ(sim.starts, 4 + 2 + 4 + 2);
}

TEST(ChaosSchedule, KillRatioChoosesTheSignal) {
  const std::vector<int> counts{4, 0};
  for (double ratio : {0.0, 1.0}) {
    Simulation sim;
    ChaosSchedule s(trace_of(counts), {.max_explorers = 4, .kill_ratio = ratio, .seed = 1});
    for (int round = 0; round < 50; ++round) {
      for (std::size_t tick = 0; tick < counts.size(); ++tick)
        sim.apply(s.plan(tick, sim.running));
    }
    EXPECT_EQ(ratio == 0.0 ? sim.kills : sim.terms, 0);
    EXPECT_EQ(sim.terms + sim.kills, 200);
  }
  // A mix: 400 preemptions at 0.3, the SIGKILL share well inside [0.2, 0.4] (binomial: the
  // standard deviation of the share is 0.023).
  Simulation sim;
  ChaosSchedule s(trace_of(counts), {.max_explorers = 4, .kill_ratio = 0.3, .seed = 9});
  for (int round = 0; round < 100; ++round) {
    for (std::size_t tick = 0; tick < counts.size(); ++tick)
      sim.apply(s.plan(tick, sim.running));
  }
  const double share = static_cast<double>(sim.kills) / static_cast<double>(sim.kills + sim.terms);
  EXPECT_GT(share, 0.2);
  EXPECT_LT(share, 0.4);
}

TEST(ChaosSchedule, SameSeedSamePlanOtherSeedOtherVictims) {
  const auto run = [](std::uint64_t seed) {
    ChaosSchedule s(trace_of({8, 2, 8, 1, 8, 3}), {.max_explorers = 8, .seed = seed});
    Simulation sim;
    std::vector<std::pair<int, std::int64_t>> log;
    for (std::size_t tick = 0; tick < 6; ++tick) {
      const auto plan = s.plan(tick, sim.running);
      for (const auto& a : plan)
        log.emplace_back(static_cast<int>(a.kind), a.victim);
      sim.apply(plan);
    }
    return log;
  };
  EXPECT_EQ(run(5), run(5));
  EXPECT_NE(run(5), run(6));
}

TEST(ChaosSchedule, RejectsBadOptions) {
  EXPECT_THROW(ChaosSchedule(trace_of({1}), {.max_explorers = 0}), std::invalid_argument);
  EXPECT_THROW(ChaosSchedule(trace_of({1}), {.kill_ratio = 1.5}), std::invalid_argument);
  EXPECT_THROW(ChaosSchedule(trace_of({1}), {.max_explorers = 2, .min_explorers = 3}),
               std::invalid_argument);
  EXPECT_THROW(ChaosSchedule(trace_of({}), {}), std::invalid_argument);
}

TEST(ChaosCommand, ParsesFlagsAndTheCommand) {
  const auto c =
      parse_chaos_command({"--trace", "t.json", "--time-scale", "600", "--max-explorers", "3",
                           "--kill-ratio", "0.25", "--seed", "4", "--grace-seconds", "2.5",
                           "--ticks", "10", "--loop", "--", "bin", "--set", "explorer.id=e{n}"});
  EXPECT_EQ(c.trace, "t.json");
  EXPECT_EQ(c.driver.time_scale, 600);
  EXPECT_EQ(c.schedule.max_explorers, 3);
  EXPECT_EQ(c.schedule.kill_ratio, 0.25);
  EXPECT_EQ(c.schedule.seed, 4u);
  EXPECT_EQ(c.driver.grace, std::chrono::milliseconds(2500));
  EXPECT_EQ(c.driver.max_ticks, 10u);
  EXPECT_TRUE(c.driver.loop);
  EXPECT_EQ(c.driver.command, (std::vector<std::string>{"bin", "--set", "explorer.id=e{n}"}));
  EXPECT_THROW(parse_chaos_command({"--trace", "t", "--"}), config::ConfigError);
  EXPECT_THROW(parse_chaos_command({"--", "bin"}), config::ConfigError);  // --trace required
  EXPECT_THROW(parse_chaos_command({"--trace", "t", "--kill-ratio", "x", "--", "b"}),
               config::ConfigError);
  EXPECT_THROW(parse_chaos_command({"--trace", "t", "--bogus", "--", "b"}), config::ConfigError);
  EXPECT_THROW(parse_chaos_command({"--trace", "t", "stray", "--", "b"}), config::ConfigError);
  EXPECT_THROW(parse_chaos_command({"--trace", "t", "--kill-ratio", "2", "--", "b"}),
               std::invalid_argument);  // out of range: the schedule's own check
  EXPECT_TRUE(parse_chaos_command({"--help"}).help);
}

}  // namespace
}  // namespace spotlight::chaos
