#pragma once
// The planner's Prometheus metrics (docs/operations.md). Built from a Registry, or detached
// (every update a no-op) when there is none.

#include <memory>

#include "common/metrics/metrics.hpp"

namespace spotlight::planner {

struct PlannerMetrics {
  metrics::Counter tasks_enqueued;   // spotlight_planner_tasks_enqueued_total (new only)
  metrics::Gauge trainer_iteration;  // spotlight_planner_trainer_iteration
  metrics::Gauge planned_iteration;  // spotlight_planner_planned_iteration (highest enqueued)
  metrics::Gauge queue_depth;        // spotlight_planner_queue_depth (not acknowledged)
  metrics::Gauge oldest_lease_age_seconds;  // spotlight_planner_oldest_lease_age_seconds
  metrics::Gauge live_explorers;            // spotlight_planner_live_explorers
  metrics::Gauge dead_letters;              // spotlight_planner_dead_letters
  metrics::Gauge previous_results;          // spotlight_planner_previous_iteration_results
  metrics::Counter leases_released;         // spotlight_planner_released_leases_total (reaper)
  metrics::Counter redis_errors;            // spotlight_planner_redis_errors_total
  // spotlight_planner_purged_tasks_total{reason="iteration_passed" | "prompt_satisfied" |
  //                                             "budget_spent"}
  metrics::Counter purged_passed;
  metrics::Counter purged_satisfied;
  metrics::Counter purged_budget;     // reason="budget_spent"
  metrics::Counter uniform_prompts;   // spotlight_planner_uniform_prompts_total
  metrics::Gauge desired_explorers;   // spotlight_planner_desired_explorers
  metrics::Gauge planned_candidates;  // spotlight_planner_planned_candidates (last plan's N)
  metrics::Gauge predicted_seconds;   // spotlight_planner_predicted_exploration_seconds
  metrics::Gauge explored_seconds;    // spotlight_planner_exploration_seconds (measured)
  metrics::Counter tasks_reconciled;  // spotlight_planner_tasks_reconciled_total (re-enqueued)
  metrics::Counter tasks_lost;        // spotlight_planner_tasks_lost_total (vanished, no payload)
  metrics::Counter state_losses;      // spotlight_planner_state_losses_total (Redis lost state)
  // spotlight_planner_plan_seconds_total{phase="decide" | "enqueue" | "record" | "report"}
  metrics::Counter plan_decide_seconds;
  metrics::Counter plan_enqueue_seconds;
  metrics::Counter plan_record_seconds;
  metrics::Counter plan_report_seconds;

  // Detached handles when `registry` is null.
  static PlannerMetrics create(const std::shared_ptr<metrics::Registry>& registry);
};

}  // namespace spotlight::planner
