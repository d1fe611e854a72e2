#pragma once
// The run's keys the planner reads and writes, as plain strings taken from run::RunKeys
// (async_protocol.md). Kept apart from RunKeys so that only planner_config.cpp includes
// common/run/run_config.hpp, whose policy_options() pulls LibTorch headers in.

#include <string>

namespace spotlight::planner {

struct PlannerKeys {
  std::string prefix;  // RunKeys::prefix ("spotlight:<run id>"): the KeyValueStore's prefix
  // Relative to `prefix` (as a KeyValueStore constructed with it names them):
  std::string trainer_iteration;  // decimal integer: the iteration the trainer works on
  std::string trainer_timing;     // JSON {"iteration", "iteration_seconds", "train_seconds"}
  std::string planner_state;      // decimal integer: the highest iteration enqueued (absent: -1)
  // RunKeys::explorer_heartbeat(id) == heartbeat_head + id + heartbeat_tail (relative).
  std::string heartbeat_head;
  std::string heartbeat_tail;

  // From run::RunKeys(run_id) (defined in planner_config.cpp).
  static PlannerKeys for_run(const std::string& run_id);

  std::string explorer_heartbeat(const std::string& explorer_id) const {
    return heartbeat_head + explorer_id + heartbeat_tail;
  }
  // The Redis key of a relative key.
  std::string absolute(const std::string& relative_key) const {
    return prefix + ":" + relative_key;
  }
};

}  // namespace spotlight::planner
