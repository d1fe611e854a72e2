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
  const std::string purged_help =
      "Seed tasks removed from the queue unrun (not lost): their iteration was passed by the "
      "trainer, their prompt had been explored enough, or their iteration had spent its budget.";
  m.purged_passed = r.counter("spotlight_planner_purged_tasks_total", purged_help,
                              {{"reason", "iteration_passed"}});
  m.purged_satisfied = r.counter("spotlight_planner_purged_tasks_total", purged_help,
                                 {{"reason", "prompt_satisfied"}});
  m.purged_budget =
      r.counter("spotlight_planner_purged_tasks_total", purged_help, {{"reason", "budget_spent"}});
  m.uniform_prompts =
      r.counter("spotlight_planner_uniform_prompts_total",
                "Prompts whose explored rewards were all alike when the trainer passed them.");
  m.desired_explorers = r.gauge(
      "spotlight_planner_desired_explorers",
      "Explorers at which the widest exploration of the next iteration would just finish before "
      "the trainer needs it (with planner.finish_probability); for an autoscaler.");
  m.planned_candidates = r.gauge("spotlight_planner_planned_candidates",
                                 "Candidates per prompt (N) of the last iteration planned.");
  m.predicted_seconds =
      r.gauge("spotlight_planner_predicted_exploration_seconds",
              "Predicted mean time to explore the last iteration planned (finish-time model).");
  m.explored_seconds =
      r.gauge("spotlight_planner_exploration_seconds",
              "Measured time from enqueueing to the last result of the last explored iteration.");
  m.tasks_reconciled = r.counter(
      "spotlight_planner_tasks_reconciled_total",
      "Seed tasks of open iterations that had vanished from the queue (acknowledged or deleted by "
      "a client other than the queue's scripts) and were enqueued again.");
  m.tasks_lost = r.counter("spotlight_planner_tasks_lost_total",
                           "Seed tasks of open iterations that had vanished from the queue with "
                           "nothing left to enqueue them again from (their payload gone too).");
  m.state_losses = r.counter(
      "spotlight_planner_state_losses_total",
      "Times the run's state in Redis was found gone or gone back (an empty-AOF restart, a "
      "FLUSHALL, deleted keys); each is named in one error line.");
  const auto plan_phase = [&](const char* phase) {
    return r.counter("spotlight_planner_plan_seconds_total",
                     "Time spent planning iterations, by phase (decide: the plan record; enqueue: "
                     "the signed seed tasks; record: the planner's progress; report: queue "
                     "statistics and the log line).",
                     {{"phase", phase}});
  };
  m.plan_decide_seconds = plan_phase("decide");
  m.plan_enqueue_seconds = plan_phase("enqueue");
  m.plan_record_seconds = plan_phase("record");
  m.plan_report_seconds = plan_phase("report");
  return m;
}

}  // namespace spotlight::planner
