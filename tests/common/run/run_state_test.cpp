// RunKeys (every key of a run, one place) and RunState (each key with its record type) over an
// in-memory KeyValueStore: the key table, round trips, and what a value of the wrong kind gives.

#include "common/run/run_state.hpp"

#include <map>
#include <string>

#include <gtest/gtest.h>

#include "common/run/run_keys.hpp"

namespace spotlight::run {
namespace {

// The KeyValueStore contract on a map (no expiry, no waiting): enough for typed access.
class MemoryKv final : public store::KeyValueStore {
 public:
  void put(std::string_view key, std::string_view value) override {
    values[std::string(key)] = std::string(value);
  }
  bool put_if_absent(std::string_view key, std::string_view value) override {
    return values.emplace(std::string(key), std::string(value)).second;
  }
  std::optional<std::string> get(std::string_view key) override {
    const auto it = values.find(std::string(key));
    if (it == values.end()) return std::nullopt;
    return it->second;
  }
  bool erase(std::string_view key) override { return values.erase(std::string(key)) > 0; }
  std::int64_t add(std::string_view key, std::int64_t delta) override {
    const std::int64_t now = counter(key) + delta;
    values[std::string(key)] = std::to_string(now);
    return now;
  }
  std::int64_t counter(std::string_view key) override {
    const auto v = get(key);
    return v ? std::stoll(*v) : 0;
  }
  bool wait(std::span<const std::string>, std::chrono::milliseconds) override { return false; }

  std::map<std::string, std::string> values;
};

TEST(RunKeys, TheKeyTable) {
  const RunKeys k("run-7");
  EXPECT_EQ(k.prefix, "spotlight:run-7");
  EXPECT_EQ(k.explore_queue, "spotlight:run-7:explore");
  EXPECT_EQ(k.weights, "spotlight:run-7:weights");
  EXPECT_EQ(k.trainer_iteration, "trainer:iteration");
  EXPECT_EQ(k.trainer_timing, "trainer:timing");
  EXPECT_EQ(k.planner_state, "planner:enqueued");
  EXPECT_EQ(k.sample_steps, "explorer:sample_steps");
  EXPECT_EQ(k.resumed_steps, "explorer:resumed_steps");
  EXPECT_EQ(k.plan(12), "planner:plan:12");
  EXPECT_EQ(k.explorer_heartbeat("e-1"), "explorer:e-1:heartbeat");
  EXPECT_EQ(k.inflight("i3/p0/c7"), "inflight:i3/p0/c7");
  EXPECT_EQ(k.cost_ledger("spot", true), "cost:spot:busy_ms");
  EXPECT_EQ(k.cost_ledger("reserved", false), "cost:reserved:idle_ms");
  EXPECT_EQ(k.absolute(k.trainer_timing), "spotlight:run-7:trainer:timing");
}

TEST(RunKeys, HeartbeatKeysAreFoundAndParsedBack) {
  for (const std::string run : {"plain", "with:colons", "glob*?[x]\\"}) {
    const RunKeys k(run);
    for (const std::string id : {"a", "host-12", "with:colon", "x:heartbeat"}) {
      EXPECT_EQ(k.explorer_of_heartbeat(k.absolute(k.explorer_heartbeat(id))), id) << run;
    }
    EXPECT_EQ(k.explorer_of_heartbeat(k.absolute("explorer:a:seen")), std::nullopt);
    EXPECT_EQ(k.explorer_of_heartbeat(k.absolute(k.trainer_iteration)), std::nullopt);
    EXPECT_EQ(k.explorer_of_heartbeat("spotlight:other:explorer:a:heartbeat"), std::nullopt);
  }
  // SCAN MATCH is a glob: the run id's glob characters are escaped, the id is the wildcard.
  EXPECT_EQ(RunKeys("plain").explorer_heartbeat_pattern(), "spotlight:plain:explorer:*:heartbeat");
  EXPECT_EQ(RunKeys("a*b").explorer_heartbeat_pattern(), "spotlight:a\\*b:explorer:*:heartbeat");
}

TEST(RunState, RecordsRoundTripUnderTheirKeys) {
  MemoryKv kv;
  RunState state(kv, RunKeys("r"));
  EXPECT_EQ(state.trainer_progress(), std::nullopt);
  EXPECT_EQ(state.plan(0), std::nullopt);

  state.put_trainer_progress({.iteration = 3, .finished = false, .unix_ms = 5});
  state.put_trainer_timing({.iteration = 2, .iteration_seconds = 1.5, .group_variance = 0.25});
  state.put_planner_progress({.enqueued_through = 4, .unix_ms = 6});
  EXPECT_TRUE(state.put_plan_if_absent({.iteration = 4, .candidates = 8, .steps = 3}));
  EXPECT_FALSE(state.put_plan_if_absent({.iteration = 4, .candidates = 1, .steps = 2}));
  state.put_heartbeat({.explorer_id = "e", .unix_ms = 77, .tasks_in_flight = 2});
  state.put_inflight({.task_id = "t", .seed = 9, .step_index = 1});
  state.add_sample_steps(10);
  state.add_sample_steps(5);
  state.add_resumed_steps(4);

  EXPECT_EQ(state.trainer_progress()->iteration, 3);
  EXPECT_EQ(state.trainer_timing()->group_variance, 0.25);
  EXPECT_EQ(state.planner_progress()->enqueued_through, 4);
  EXPECT_EQ(state.plan(4)->candidates, 8);  // the first plan stays
  EXPECT_EQ(state.heartbeat("e")->tasks_in_flight, 2);
  EXPECT_EQ(state.inflight("t")->seed, 9u);
  EXPECT_TRUE(state.erase_inflight("t"));
  EXPECT_EQ(state.inflight("t"), std::nullopt);
  EXPECT_EQ(state.sample_steps(), 15);
  EXPECT_EQ(state.resumed_steps(), 4);
  // Under the keys of the table, and nothing else.
  EXPECT_EQ(kv.values.count("trainer:iteration"), 1u);
  EXPECT_EQ(kv.values.count("planner:plan:4"), 1u);
  EXPECT_EQ(kv.values.count("explorer:e:heartbeat"), 1u);
  EXPECT_EQ(kv.values.size(), 7u);
}

TEST(RunState, AValueOfAnotherKindIsAnErrorNamingTheKey) {
  MemoryKv kv;
  RunState state(kv, RunKeys("r"));
  kv.values["trainer:iteration"] = "3";  // the decimal string of the unversioned encoding
  try {
    state.trainer_progress();
    FAIL() << "expected MalformedRunState";
  } catch (const MalformedRunState& e) {
    EXPECT_EQ(e.key(), "spotlight:r:trainer:iteration");
    EXPECT_NE(std::string(e.what()).find("trainer_progress"), std::string::npos) << e.what();
  }
  kv.values["trainer:timing"] = R"({"iteration":0,"iteration_seconds":1.5})";
  EXPECT_THROW(state.trainer_timing(), MalformedRunState);
  // A record of another type under a key is as wrong as garbage.
  kv.values["planner:enqueued"] = wire::TrainerProgress{.iteration = 1}.encode();
  EXPECT_THROW(state.planner_progress(), MalformedRunState);
  // A plan record filed under another iteration's key is refused.
  kv.values["planner:plan:2"] = wire::PlanRecord{.iteration = 3, .candidates = 1}.encode();
  EXPECT_THROW(state.plan(2), MalformedRunState);
}

}  // namespace
}  // namespace spotlight::run
