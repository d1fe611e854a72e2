#pragma once
// The planner's per-iteration plan (exploration.mode=async): how many candidate seeds per prompt
// (N) were enqueued for an iteration and with how many sampler steps (S), so the trainer knows
// which task ids to wait for when N varies per iteration. Stored as JSON in the run's
// KeyValueStore under plan_key(iteration), written by the planner *before* the iteration's seed
// tasks are enqueued (so a result never exists without its plan); never rewritten once present.
// The record may carry more fields (the planner's reason: arms, predictions, scores) that readers
// other than the planner ignore.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace spotlight::run {

struct PlanRecord {
  std::int64_t iteration = 0;
  int candidates = 0;  // N; 0: nothing explored, train on random seeds at once
  int steps = 0;       // S of the seed tasks (0 when candidates is 0)
};

// Relative key (RunKeys::prefix store): "planner:plan:<iteration>".
std::string plan_key(std::int64_t iteration);

// The iteration, candidates and steps fields of a plan record's JSON object; nullopt when the
// text is not such an object (missing or ill-typed fields, negative counts).
std::optional<PlanRecord> parse_plan_record(std::string_view json);

}  // namespace spotlight::run
