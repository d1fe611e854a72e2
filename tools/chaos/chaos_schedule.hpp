#pragma once
// ChaosSchedule: what the preemption driver does at each tick of an availability trace, as a pure
// function of (trace, options, the processes running) -- no processes, no clock, so it is unit-
// tested directly.
//
//   target(tick) = max(min_explorers, round(trace.counts[tick] * max_explorers / trace.peak()))
//   plan(tick, running):
//     |running| < target:  start target - |running| processes
//     |running| > target:  preempt |running| - target of them at once (a correlated burst when
//                          the trace drops by several), victims drawn uniformly from `running`;
//                          each is SIGKILL with probability kill_ratio, else SIGTERM (+ grace)
//   Draws come from a SplitMix64 stream of `seed`: the same inputs give the same plan anywhere.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tools/chaos/trace.hpp"

namespace spotlight::chaos {

struct ScheduleOptions {
  int max_explorers = 4;  // the trace's peak maps to this many processes, >= 1
  // A floor (on-demand capacity kept when the spot market has none), in [0, max_explorers].
  int min_explorers = 0;
  double kill_ratio = 0.5;  // share of preemptions that are SIGKILL (no notice), in [0, 1]
  std::uint64_t seed = 0;

  // Throws std::invalid_argument naming the bad field.
  void validate() const;
};

enum class ActionKind { kStart, kTerm, kKill };
std::string_view to_string(ActionKind kind);  // "start", "term", "kill"

struct Action {
  ActionKind kind = ActionKind::kStart;
  std::int64_t victim = -1;  // kTerm/kKill: an element of `running`; kStart: -1
};

class ChaosSchedule {
 public:
  // Throws std::invalid_argument for invalid options or an empty trace.
  ChaosSchedule(AvailabilityTrace trace, ScheduleOptions options);

  const AvailabilityTrace& trace() const { return trace_; }
  std::size_t ticks() const { return trace_.counts.size(); }
  // Processes wanted during `tick` (tick modulo the trace length).
  int target(std::size_t tick) const;
  // The actions of `tick` given the ids of the processes counted as running now. Preemptions
  // come first, then starts; each victim appears once.
  std::vector<Action> plan(std::size_t tick, const std::vector<std::int64_t>& running);

 private:
  std::uint64_t next();  // SplitMix64
  double uniform();      // [0, 1)

  AvailabilityTrace trace_;
  ScheduleOptions options_;
  std::uint64_t state_;
};

}  // namespace spotlight::chaos
