// The driver with real (tiny shell) processes: it follows the trace, signals as planned, reaps
// everything, and logs each event.

#include "tools/chaos/driver.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/process.hpp"

namespace spotlight::chaos {
namespace {

std::vector<nlohmann::json> read_events(const std::filesystem::path& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    out.push_back(nlohmann::json::parse(line));
  return out;
}

// A process that exits 0 on SIGTERM (as an explorer does after committing) and otherwise waits.
const std::vector<std::string> kPatient{"/bin/sh", "-c",
                                        "trap 'exit 0' TERM; while :; do sleep 0.05; done"};

TEST(Driver, FollowsTheTraceWithBothSignalsAndReapsEverything) {
  const auto dir = spotlight::testing::make_temp_dir("chaos-driver");
  AvailabilityTrace trace;
  trace.gap_seconds = 1;
  trace.counts = {3, 3, 0, 3, 1, 3, 0};  // drops of 3, 2, 3: 8 preemptions, bursts up to 3
  DriverOptions o;
  o.command = kPatient;
  o.time_scale = 4;  // 0.25 s per tick
  o.grace = std::chrono::milliseconds(5000);
  o.events = dir / "events.jsonl";
  o.log_dir = dir / "logs";
  Driver driver(ChaosSchedule(trace, {.max_explorers = 3, .kill_ratio = 0.5, .seed = 2}), o);
  const auto summary = driver.run({});

  EXPECT_EQ(summary.ticks, 7);
  EXPECT_EQ(summary.starts, 3 + 3 + 2);
  EXPECT_EQ(summary.terms + summary.kills, 8);
  EXPECT_GT(summary.terms, 0);
  EXPECT_GT(summary.kills, 0);
  EXPECT_EQ(summary.max_burst, 3);
  EXPECT_EQ(summary.escalated, 0);
  EXPECT_EQ(summary.term_exit_nonzero, 0);  // SIGTERM'd processes exited 0 within the grace
  EXPECT_EQ(summary.failed_exits, 0);

  // Every started process exited exactly once; killed ones with 128 + SIGKILL.
  std::map<std::int64_t, std::string> how;  // serial -> last signal event
  std::map<std::int64_t, int> exits;
  for (const auto& e : read_events(o.events)) {
    const auto serial = e["serial"].get<std::int64_t>();
    const auto kind = e["event"].get<std::string>();
    if (kind == "exit") {
      ++exits[serial];
      if (how[serial] == "kill") {
        EXPECT_EQ(e["status"].get<int>(), 137) << serial;
      }
      if (how[serial] == "term") {
        EXPECT_EQ(e["status"].get<int>(), 0) << serial;
      }
    } else if (kind != "start") {
      how[serial] = kind;
    }
  }
  EXPECT_EQ(exits.size(), 8u);
  for (const auto& [serial, n] : exits)
    EXPECT_EQ(n, 1) << serial;
  std::filesystem::remove_all(dir);
}

TEST(Driver, EndsWhenAProcessFinishesCleanlyOnItsOwn) {
  AvailabilityTrace trace;
  trace.gap_seconds = 1;
  trace.counts = {2};
  DriverOptions o;
  o.command = {"/bin/sh", "-c", "exit 0"};
  o.time_scale = 10;
  o.loop = true;  // would run forever without the clean exit
  Driver driver(ChaosSchedule(trace, {.max_explorers = 2}), o);
  const auto summary = driver.run({});
  EXPECT_GE(summary.clean_exits, 1);
  EXPECT_EQ(summary.terms + summary.kills, 0);
}

TEST(Driver, EscalatesToSigkillWhenTheGraceRunsOut) {
  AvailabilityTrace trace;
  trace.gap_seconds = 1;
  trace.counts = {1, 0, 0, 0, 0, 0, 0, 0};
  DriverOptions o;
  o.command = {"/bin/sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"};  // ignores SIGTERM
  o.time_scale = 10;
  o.grace = std::chrono::milliseconds(100);
  o.escalation_slack = std::chrono::milliseconds(100);
  Driver driver(ChaosSchedule(trace, {.max_explorers = 1, .kill_ratio = 0.0}), o);
  const auto summary = driver.run({});
  EXPECT_EQ(summary.terms, 1);
  EXPECT_EQ(summary.escalated, 1);
}

}  // namespace
}  // namespace spotlight::chaos
