// QueueTotalsMetrics: the queue's Redis-kept totals become counters that grow by what the totals
// grew, never go down, and show up in the registry's exposition under their names.
#include "services/planner/queue_metrics.hpp"

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "common/metrics/metrics.hpp"

namespace spotlight::planner {
namespace {

double value_of(const metrics::Registry& registry, const std::string& name) {
  const std::string text = registry.text();
  const auto at = text.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + name.size() + 2));
}

TEST(QueueTotalsMetrics, CountersFollowTheTotalsGrowth) {
  auto registry = std::make_shared<metrics::Registry>("planner");
  QueueTotalsMetrics totals(registry);
  queue::QueueStats s;
  s.acked_total = 5;
  s.reclaimed_total = 2;
  totals.update(s);
  EXPECT_EQ(value_of(*registry, "spotlight_planner_queue_acked_total"), 5);
  EXPECT_EQ(value_of(*registry, "spotlight_planner_queue_reclaimed_total"), 2);
  s.acked_total = 9;
  totals.update(s);
  totals.update(s);  // no growth, no change
  EXPECT_EQ(value_of(*registry, "spotlight_planner_queue_acked_total"), 9);
  // The queue's keys were deleted: the totals restart; the counter does not go down, and grows
  // again from the new start.
  s.acked_total = 1;
  totals.update(s);
  EXPECT_EQ(value_of(*registry, "spotlight_planner_queue_acked_total"), 9);
  s.acked_total = 4;
  totals.update(s);
  EXPECT_EQ(value_of(*registry, "spotlight_planner_queue_acked_total"), 12);
  for (const char* name :
       {"spotlight_planner_queue_enqueued_total", "spotlight_planner_queue_leased_total",
        "spotlight_planner_queue_failed_total", "spotlight_planner_queue_dead_lettered_total",
        "spotlight_planner_queue_duplicate_results_total"}) {
    EXPECT_EQ(value_of(*registry, name), 0) << name;
  }
}

TEST(QueueTotalsMetrics, WithoutARegistryUpdatesDoNothing) {
  QueueTotalsMetrics totals(nullptr);
  queue::QueueStats s;
  s.acked_total = 3;
  totals.update(s);  // must not crash
}

}  // namespace
}  // namespace spotlight::planner
