#pragma once
// The seed-task queue's cumulative totals (QueueStats, kept in Redis by the queue's scripts) as
// Prometheus counters of the planner: leases, acknowledgements, reclaims, failures,
// dead-lettered tasks, duplicate results. Every explorer updates the totals in Redis; the planner,
// which reads QueueStats anyway, exports them once for the whole run.
//
// Contract: update() adds the growth since the previous update (the first adds the totals
// themselves); a total that went down (the queue's keys were deleted) is taken as the new start.
// Not thread-safe: the planner's loop calls it. Detached (updates do nothing) without a registry.

#include <cstdint>
#include <memory>
#include <vector>

#include "common/metrics/metrics.hpp"
#include "common/queue/lease_queue.hpp"

namespace spotlight::planner {

class QueueTotalsMetrics {
 public:
  explicit QueueTotalsMetrics(const std::shared_ptr<metrics::Registry>& registry);
  void update(const queue::QueueStats& stats);

 private:
  struct Total {
    std::int64_t queue::QueueStats::*field;
    metrics::Counter counter;
    std::int64_t last = 0;
  };
  std::vector<Total> totals_;
};

}  // namespace spotlight::planner
