#include "services/planner/queue_metrics.hpp"

namespace spotlight::planner {

QueueTotalsMetrics::QueueTotalsMetrics(const std::shared_ptr<metrics::Registry>& registry) {
  if (!registry) return;
  auto add = [&](std::int64_t queue::QueueStats::*field, const char* name, const char* help) {
    totals_.push_back(Total{field, registry->counter(name, help)});
  };
  using S = queue::QueueStats;
  add(&S::enqueued_total, "spotlight_planner_queue_enqueued_total",
      "Seed tasks enqueued in the run's queue (all planners).");
  add(&S::leased_total, "spotlight_planner_queue_leased_total",
      "Seed-task deliveries under a lease, reclaims included (all explorers).");
  add(&S::acked_total, "spotlight_planner_queue_acked_total",
      "Seed tasks acknowledged with a result.");
  add(&S::reclaimed_total, "spotlight_planner_queue_reclaimed_total",
      "Expired leases reclaimed and re-delivered.");
  add(&S::failed_total, "spotlight_planner_queue_failed_total", "Seed-task attempts that failed.");
  add(&S::dead_lettered_total, "spotlight_planner_queue_dead_lettered_total",
      "Seed tasks moved to the dead-letter stream.");
  add(&S::duplicate_results_total, "spotlight_planner_queue_duplicate_results_total",
      "Results written for a task that had one already (a task run twice).");
  add(&S::quarantined_total, "spotlight_planner_queue_quarantined_total",
      "Recorded results found invalid (poisoned) and moved aside.");
  add(&S::requeued_total, "spotlight_planner_queue_requeued_total",
      "Seed tasks enqueued again after their result was quarantined.");
}

void QueueTotalsMetrics::update(const queue::QueueStats& stats) {
  for (Total& t : totals_) {
    const std::int64_t now = stats.*(t.field);
    if (now > t.last) t.counter.inc(static_cast<double>(now - t.last));
    t.last = now;
  }
}

}  // namespace spotlight::planner
