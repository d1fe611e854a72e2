// The simulator: the in-memory lease queue keeps the lease contract (idempotent results, release,
// reclaim of idle leases, the delivery limit), and a whole simulation runs on a shipped trace
// with consistent accounting.

#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tools/simulator/memory_lease_queue.hpp"
#include "tools/simulator/simulation.hpp"
#include "tools/simulator/trace.hpp"

namespace spotlight::simulator {
namespace {

std::string shipped_trace() {
  const char* src = std::getenv("SPOTLIGHT_SOURCE_DIR");
  return (std::filesystem::path(src ? src : ".") / "deploy" / "traces" /
          "availability_16-node_aws-08-27-2023_us-east-2b_v100_1.json")
      .string();
}

TEST(MemoryLeaseQueue, KeepsTheLeaseContract) {
  std::int64_t now = 0;
  queue::LeaseQueueOptions o;
  o.lease_timeout = std::chrono::milliseconds(1000);
  o.max_deliveries = 2;
  MemoryLeaseQueue q(o, [&] { return now; });
  EXPECT_TRUE(q.enqueue("a", "pa").enqueued);
  EXPECT_FALSE(q.enqueue("a", "again").enqueued);  // idempotent by id
  EXPECT_TRUE(q.enqueue("b", "pb").enqueued);
  auto l = q.lease("x", 1, std::chrono::milliseconds(0));
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].task_id, "a");
  EXPECT_TRUE(q.reclaim("y", o.lease_timeout, 10).empty());  // not idle long enough
  now = 1500;
  auto stolen = q.reclaim("y", o.lease_timeout, 10);  // x hung: y gets it, delivery 2
  ASSERT_EQ(stolen.size(), 1u);
  EXPECT_EQ(stolen[0].delivery_count, 2);
  EXPECT_FALSE(q.extend(l[0]));  // x lost it
  EXPECT_TRUE(q.complete(stolen[0], "ra").recorded);
  EXPECT_TRUE(q.complete(l[0], "late").duplicate());  // x's late run changes nothing
  EXPECT_EQ(q.result("a"), "ra");
  auto b = q.lease("x", 5, std::chrono::milliseconds(0));
  ASSERT_EQ(b.size(), 1u);
  EXPECT_TRUE(q.release(b[0]));  // re-deliverable at once, not counted
  EXPECT_FALSE(q.extend(b[0]));  // and no longer held by x
  EXPECT_TRUE(q.reclaim_from("x", "reaper", 10).empty());
  auto again = q.reclaim("y", o.lease_timeout, 10);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].delivery_count, 1);
  now += 5000;
  EXPECT_EQ(q.reclaim("z", o.lease_timeout, 10).size(), 1u);  // delivery 2
  now += 5000;
  EXPECT_TRUE(q.reclaim("w", o.lease_timeout, 10).empty());  // would be 3 > 2: dead-lettered
  EXPECT_EQ(q.dead_letters(10).size(), 1u);
  const auto s = q.stats();
  EXPECT_EQ(s.length, 0);
  EXPECT_EQ(s.results, 1);
  EXPECT_EQ(s.acked_total, 1);
}

// As the Redis queue: a dead-lettered task (reject, fail or reclaim past max_deliveries) reads as
// abandoned with the dead letter's error, so a waiter stops waiting for it; others do not.
TEST(MemoryLeaseQueue, DeadLetteredTasksReadAsAbandoned) {
  std::int64_t now = 0;
  queue::LeaseQueueOptions o;
  o.lease_timeout = std::chrono::milliseconds(1000);
  o.max_deliveries = 2;
  MemoryLeaseQueue q(o, [&] { return now; });
  for (const char* id : {"rejected", "failed", "expired", "done", "failed-once", "waiting"})
    q.enqueue(id, "p");
  std::map<std::string, queue::Lease> held;
  for (const auto& l : q.lease("x", 5, std::chrono::milliseconds(0)))
    held[l.task_id] = l;
  ASSERT_EQ(held.size(), 5u);
  const std::vector<std::string> ids{"rejected",    "failed",  "expired", "done",
                                     "failed-once", "waiting", "unknown"};
  EXPECT_EQ(q.abandoned(ids), std::vector<std::optional<queue::Abandoned>>(ids.size()));

  EXPECT_EQ(q.reject(held["rejected"], "outside the run's limits"),
            queue::FailOutcome::kDeadLettered);
  EXPECT_TRUE(q.complete(held["done"], "r").recorded);
  EXPECT_EQ(q.fail(held["failed"], "boom 1"), queue::FailOutcome::kRetry);
  EXPECT_EQ(q.fail(held["failed-once"], "transient"), queue::FailOutcome::kRetry);
  auto again = q.reclaim("y", o.lease_timeout, 10);  // both given back: delivery 2
  ASSERT_EQ(again.size(), 2u);
  EXPECT_FALSE(q.abandoned(std::vector<std::string>{"failed-once"})[0]) << "it may succeed";
  for (const auto& l : again) {
    if (l.task_id == "failed") EXPECT_EQ(q.fail(l, "boom 2"), queue::FailOutcome::kDeadLettered);
    if (l.task_id == "failed-once") EXPECT_TRUE(q.complete(l, "r").recorded);
  }
  now += 5000;  // "x" hung on "expired": delivery 2, then it hangs again
  ASSERT_EQ(q.reclaim("z", o.lease_timeout, 10).size(), 1u);
  now += 5000;
  EXPECT_TRUE(q.reclaim("w", o.lease_timeout, 10).empty());  // past the limit

  const auto how = q.abandoned(ids);
  ASSERT_EQ(how.size(), ids.size());
  EXPECT_EQ(how[0],
            (queue::Abandoned{queue::Abandonment::kDeadLettered, "outside the run's limits"}));
  EXPECT_EQ(how[1], (queue::Abandoned{queue::Abandonment::kDeadLettered, "boom 2"}));
  ASSERT_TRUE(how[2]);
  EXPECT_EQ(how[2]->how, queue::Abandonment::kDeadLettered);
  EXPECT_FALSE(how[3]) << "completed";
  EXPECT_FALSE(how[4]) << "failed once, then completed";
  EXPECT_FALSE(how[5]) << "waiting";
  EXPECT_FALSE(how[6]) << "unknown";
  const auto s = q.stats();
  EXPECT_EQ(s.dead_lettered_total, 3);
  EXPECT_EQ(s.enqueued_total + s.requeued_total,
            s.acked_total + s.dead_lettered_total + s.purged_total + s.length);
}

TEST(Trace, LoadsAShippedTraceAndScalesIt) {
  const Trace t = Trace::load(shipped_trace());
  EXPECT_EQ(t.peak(), 16);
  EXPECT_DOUBLE_EQ(t.gap_seconds, 300);
  for (int i = 0; i < 50; ++i) {
    const int a = t.available(i * 300.0, 64);
    EXPECT_GE(a, 0);
    EXPECT_LE(a, 64);
    EXPECT_EQ(a, static_cast<int>(std::lround(t.data[static_cast<std::size_t>(i)] * 4.0)));
  }
  EXPECT_THROW(Trace::load("/nonexistent/trace.json"), std::runtime_error);
}

TEST(Simulation, RunsOnAShippedTraceWithConsistentAccounting) {
  const Trace trace = Trace::load(shipped_trace());
  SimOptions o;
  o.prompts = 8;
  o.group_size = 8;
  o.reserved_gpus = 8;
  o.bandit.candidates = {8, 16, 32};
  o.bandit.steps = {4, 10};
  o.learning.z0 = 0.0;
  o.learning.sigma_d = 1.5;
  o.learning.eta = 0.05;
  o.learning.noise = 60.0;  // the noisy regime our runs are in: selection helps
  o.learning.stale_flip = 0.1;
  o.target_score = 0.6;
  o.max_iterations = 400;
  const SimResult none = simulate(Mode::kNone, o, nullptr, 0);
  const SimResult async = simulate(Mode::kAsync, o, &trace, 32);
  for (const auto* r : {&none, &async}) {
    EXPECT_TRUE(r->reached) << to_string(r->mode);
    EXPECT_GT(r->iterations, 0);
    EXPECT_NEAR(r->reserved_cost,
                o.reserved_gpus * r->seconds * o.costs.reserved_price_per_hour / 3600, 1e-6);
    int planned = 0;
    for (const auto& [arm, n] : r->arms)
      planned += n;
    if (r->mode == Mode::kAsync) {
      EXPECT_GE(planned, r->iterations);
    }
  }
  EXPECT_EQ(none.spot_cost, 0);
  EXPECT_GT(async.spot_cost, 0);
  EXPECT_GT(async.tasks_done, 0);
  EXPECT_GE(async.spot_busy_share, 0);
  EXPECT_LE(async.spot_busy_share, 1);
  // Selection makes every iteration count for more: fewer iterations to the same target.
  EXPECT_LT(async.iterations, none.iterations);
  EXPECT_THROW(simulate(Mode::kOffload, o, &trace, 32), std::invalid_argument);
}

}  // namespace
}  // namespace spotlight::simulator
