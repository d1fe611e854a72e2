#include "services/planner/planner_metrics.hpp"

namespace spotlight::planner {

PlannerMetrics PlannerMetrics::create(const std::shared_ptr<metrics::Registry>& registry) {
  PlannerMetrics m;
  if (!registry) return m;
  metrics::Registry& r = *registry;
  m.tasks_enqueued =
      r.counter("spotlight_planner_tasks_enqueued_total",
                "Seed tasks this planner added to the queue (re-enqueues excluded).");
  m.trainer_iteration =
      r.gauge("spotlight_planner_trainer_iteration", "The iteration the trainer works on.");
  m.planned_iteration = r.gauge("spotlight_planner_planned_iteration",
                                "The highest iteration whose seed tasks are enqueued.");
  m.queue_depth = r.gauge("spotlight_planner_queue_depth",
                          "Seed tasks enqueued and not acknowledged (waiting + leased).");
  m.oldest_lease_age_seconds = r.gauge("spotlight_planner_oldest_lease_age_seconds",
                                       "Idle time of the stalest seed-task lease.");
  m.live_explorers = r.gauge("spotlight_planner_live_explorers",
                             "Explorers whose heartbeat is fresher than the dead threshold.");
  m.dead_letters =
      r.gauge("spotlight_planner_dead_letters", "Seed tasks in the dead-letter stream.");
  m.previous_results =
      r.gauge("spotlight_planner_previous_iteration_results",
              "Results present for the iteration before the last one planned, when planning it.");
  m.leases_released = r.counter("spotlight_planner_released_leases_total",
                                "Leases of dead explorers handed back for re-delivery.");
  m.redis_errors =
      r.counter("spotlight_planner_redis_errors_total", "Failed planner passes (Redis errors).");
  return m;
}

}  // namespace spotlight::planner
