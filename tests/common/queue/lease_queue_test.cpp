// RedisLeaseQueue against a real redis-server: the lease / ack / reclaim / dead-letter contract of
// docs/preemption.md, idempotent results, durability across a Redis restart, typed errors.

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/queue/redis_lease_queue.hpp"
#include "common/redis/client.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/wait_for.hpp"

namespace spotlight::queue {
namespace {

using std::chrono::milliseconds;
using testing::RedisServer;
using testing::wait_for;

constexpr milliseconds kLeaseTimeout{200};
constexpr milliseconds kPatience{10000};  // upper bound for conditions that should hold quickly

class LeaseQueueTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (RedisServer::find_executable()) server_ = std::make_unique<RedisServer>();
  }
  static void TearDownTestSuite() { server_.reset(); }
  void SetUp() override { SPOTLIGHT_REQUIRE_REDIS_SERVER(); }

  // Options under a key prefix unique to the running test.
  static LeaseQueueOptions options() {
    LeaseQueueOptions o;
    o.key_prefix =
        std::string("test:") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    o.lease_timeout = kLeaseTimeout;
    o.block_timeout = milliseconds(0);
    o.max_deliveries = 3;
    return o;
  }
  static RedisLeaseQueue make_queue(LeaseQueueOptions o = options()) {
    return RedisLeaseQueue(server().client_options(), std::move(o));
  }

  static RedisServer& server() { return *server_; }

 private:
  static std::unique_ptr<RedisServer> server_;
};

std::unique_ptr<RedisServer> LeaseQueueTest::server_;

TEST_F(LeaseQueueTest, LeaseCompleteAndNothingAcknowledgedComesBack) {
  auto q = make_queue();
  const std::string binary("pay\0load\r\n", 10);
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(q.enqueue("t" + std::to_string(i), binary).enqueued);

  auto leases = q.lease("a", 10, milliseconds(0));
  ASSERT_EQ(leases.size(), 3u);
  std::set<std::string> seen;
  for (const auto& l : leases) {
    EXPECT_EQ(l.payload, binary);
    EXPECT_EQ(l.delivery_count, 1);
    EXPECT_EQ(l.consumer, "a");
    seen.insert(l.task_id);
  }
  EXPECT_EQ(seen, (std::set<std::string>{"t0", "t1", "t2"}));

  QueueStats s = q.stats();
  EXPECT_EQ(s.length, 3);
  EXPECT_EQ(s.leased, 3);
  EXPECT_EQ(s.waiting, 0);

  for (const auto& l : leases) {
    const Completion c = q.complete(l, "result-of-" + l.task_id + std::string("\0!", 2));
    EXPECT_TRUE(c.recorded);
    EXPECT_TRUE(c.acked);
  }
  EXPECT_EQ(q.result("t1"), "result-of-t1" + std::string("\0!", 2));
  EXPECT_EQ(q.result("nope"), std::nullopt);
  EXPECT_EQ(q.result_count(), 3);

  // Acknowledged work is never delivered again, however it is asked for.
  EXPECT_TRUE(q.lease("a", 10, milliseconds(0)).empty());
  EXPECT_TRUE(q.reclaim("b", milliseconds(0), 10).empty());
  EXPECT_TRUE(q.reclaim_from("a", "b", 10).empty());

  s = q.stats();
  EXPECT_EQ(s.length, 0);
  EXPECT_EQ(s.leased, 0);
  EXPECT_EQ(s.results, 3);
  EXPECT_EQ(s.enqueued_total, 3);
  EXPECT_EQ(s.leased_total, 3);
  EXPECT_EQ(s.acked_total, 3);
  EXPECT_EQ(s.duplicate_results_total, 0);

  std::set<std::string> walked;
  q.for_each_result([&](std::string_view task, std::string_view result) {
    walked.insert(std::string(task));
    EXPECT_EQ(result.substr(0, 10), "result-of-");
  });
  EXPECT_EQ(walked, seen);
}

// results(ids) is one HMGET in the ids' order; complete() rings the bell that a consumer on another
// connection waits on (a duplicate result does not), and many results between two waits are one
// ring.
TEST_F(LeaseQueueTest, ResultsInOneBatchAndTheBellWakesAWaiter) {
  auto q = make_queue();
  auto consumer = make_queue();  // the trainer's own connection
  EXPECT_TRUE(consumer.has_result_notices());
  EXPECT_TRUE(consumer.results({}).empty());
  for (int i = 0; i < 3; ++i)
    q.enqueue("t" + std::to_string(i), "p");
  const std::vector<std::string> ids = {"t2", "none", "t0"};
  EXPECT_EQ(consumer.results(ids), (std::vector<std::optional<std::string>>(3)));
  EXPECT_FALSE(consumer.wait_result_notice(milliseconds(20)));  // nothing recorded yet

  auto leases = q.lease("a", 3, milliseconds(0));
  ASSERT_EQ(leases.size(), 3u);
  bool woken = false;
  std::thread waiter([&] { woken = consumer.wait_result_notice(kPatience); });
  const auto before = std::chrono::steady_clock::now();
  q.complete(leases[0], "r-" + leases[0].task_id);
  waiter.join();
  EXPECT_TRUE(woken);
  EXPECT_LT(std::chrono::steady_clock::now() - before, kPatience);
  for (std::size_t i = 1; i < leases.size(); ++i)
    q.complete(leases[i], "r-" + leases[i].task_id);
  EXPECT_TRUE(consumer.wait_result_notice(milliseconds(20)));   // two results, one ring
  EXPECT_FALSE(consumer.wait_result_notice(milliseconds(20)));  // taken
  EXPECT_EQ(consumer.results(ids),
            (std::vector<std::optional<std::string>>{"r-t2", std::nullopt, "r-t0"}));
  // A duplicate result records nothing and rings nothing.
  q.enqueue("t3", "p");
  auto again = q.lease("b", 1, milliseconds(0));
  ASSERT_EQ(again.size(), 1u);
  Lease stale = again[0];
  stale.task_id = "t0";  // a late duplicate of a recorded task
  EXPECT_FALSE(q.complete(stale, "other").recorded);
  EXPECT_FALSE(consumer.wait_result_notice(milliseconds(20)));
  EXPECT_EQ(consumer.result("t0"), "r-t0");
}

TEST_F(LeaseQueueTest, EnqueueIsIdempotentPerTaskId) {
  auto q = make_queue();
  const EnqueueResult first = q.enqueue("t", "p1");
  const EnqueueResult again = q.enqueue("t", "p2");
  EXPECT_TRUE(first.enqueued);
  EXPECT_FALSE(again.enqueued);
  EXPECT_EQ(again.entry_id, first.entry_id);
  const std::vector<Task> batch = {{"t", "x"}, {"u", "x"}, {"v", "x"}, {"u", "y"}};
  EXPECT_EQ(q.enqueue_many(batch), 2);
  EXPECT_EQ(q.stats().length, 3);

  auto leases = q.lease("a", 10, milliseconds(0));
  ASSERT_EQ(leases.size(), 3u);
  for (const auto& l : leases) {
    if (l.task_id == "t") {
      EXPECT_EQ(l.payload, "p1");
    }
    q.complete(l, "r");
  }
  EXPECT_FALSE(q.enqueue("t", "p3").enqueued);  // completed tasks stay known
  EXPECT_TRUE(q.lease("a", 10, milliseconds(0)).empty());
  EXPECT_EQ(q.stats().enqueued_total, 3);
}

TEST_F(LeaseQueueTest, LeaseWaitsForWorkUpToItsBlockTimeout) {
  redis::RedisOptions ro = server().client_options();
  ro.command_timeout = milliseconds(200);  // shorter than the block: lease must extend it
  RedisLeaseQueue q(ro, options());
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(q.lease("a", 1, milliseconds(600)).empty());
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(550));

  std::thread producer([&] {
    auto p = make_queue();
    p.enqueue("late", "x");
  });
  const auto leases = q.lease("a", 1, kPatience);
  producer.join();
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0].task_id, "late");
}

TEST_F(LeaseQueueTest, ExpiredLeaseIsReclaimedAndTheSlowHolderIsADuplicate) {
  auto q = make_queue();
  q.enqueue("t", "p");
  const auto a = q.lease("a", 1, milliseconds(0));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_TRUE(q.reclaim("b", kLeaseTimeout, 10).empty()) << "a fresh lease must not be reclaimed";

  std::vector<Lease> b;
  ASSERT_TRUE(
      wait_for([&] { return !(b = q.reclaim("b", kLeaseTimeout, 10)).empty(); }, kPatience));
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].task_id, "t");
  EXPECT_EQ(b[0].entry_id, a[0].entry_id);
  EXPECT_EQ(b[0].delivery_count, 2);
  EXPECT_EQ(b[0].consumer, "b");
  EXPECT_FALSE(q.extend(a[0])) << "a lost its lease";
  EXPECT_TRUE(q.extend(b[0]));

  const Completion by_b = q.complete(b[0], "from-b");
  const Completion by_a = q.complete(a[0], "from-a");
  EXPECT_TRUE(by_b.recorded && by_b.acked);
  EXPECT_TRUE(by_a.duplicate());
  EXPECT_FALSE(by_a.acked);
  EXPECT_EQ(q.result("t"), "from-b");
  const QueueStats s = q.stats();
  EXPECT_EQ(s.results, 1);
  EXPECT_EQ(s.acked_total, 1);
  EXPECT_EQ(s.duplicate_results_total, 1);
  EXPECT_EQ(s.reclaimed_total, 1);
  EXPECT_EQ(s.length, 0);
}

TEST_F(LeaseQueueTest, StaleHolderFinishingFirstWinsAndTheReclaimerIsTheDuplicate) {
  auto q = make_queue();
  q.enqueue("t", "p");
  const auto a = q.lease("a", 1, milliseconds(0));
  const auto b = q.reclaim_from("a", "b", 10);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_TRUE(q.complete(a[0], "from-a").recorded);
  const Completion late = q.complete(b[0], "from-b");
  EXPECT_TRUE(late.duplicate());
  EXPECT_FALSE(late.acked);
  EXPECT_EQ(q.result("t"), "from-a");
  EXPECT_EQ(q.stats().acked_total, 1);
}

TEST_F(LeaseQueueTest, ExtendKeepsALongTaskLeased) {
  LeaseQueueOptions o = options();
  o.lease_timeout = 2 * kLeaseTimeout;  // heartbeats at 1/8 of it: robust on a loaded machine
  auto q = make_queue(o);
  q.enqueue("long", "p");
  const auto a = q.lease("a", 1, milliseconds(0));
  ASSERT_EQ(a.size(), 1u);
  // Hold it for three lease timeouts.
  const auto until = std::chrono::steady_clock::now() + 3 * o.lease_timeout;
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_TRUE(q.extend(a[0]));
    ASSERT_TRUE(q.reclaim("b", o.lease_timeout, 10).empty());
    std::this_thread::sleep_for(o.lease_timeout / 8);  // pacing the heartbeat, not synchronising
  }
  EXPECT_EQ(q.stats().leased_total, 1) << "extend must not count as a delivery";
  // Heartbeats stop: the lease expires and moves on.
  std::vector<Lease> b;
  ASSERT_TRUE(
      wait_for([&] { return !(b = q.reclaim("b", o.lease_timeout, 10)).empty(); }, kPatience));
  EXPECT_EQ(b[0].delivery_count, 2);
}

TEST_F(LeaseQueueTest, FailedTaskIsRetriedThenDeadLetteredWithItsLastError) {
  auto q = make_queue();  // max_deliveries = 3
  q.enqueue("bad", std::string("p\0", 2));
  auto leases = q.lease("a", 1, milliseconds(0));
  for (int delivery = 1; delivery <= 3; ++delivery) {
    ASSERT_EQ(leases.size(), 1u) << "delivery " << delivery;
    EXPECT_EQ(leases[0].delivery_count, delivery);
    const FailOutcome outcome = q.fail(leases[0], "boom " + std::to_string(delivery));
    EXPECT_EQ(q.last_error("bad"), "boom " + std::to_string(delivery));
    if (delivery < 3) {
      EXPECT_EQ(outcome, FailOutcome::kRetry);
      leases = q.reclaim("w" + std::to_string(delivery), kLeaseTimeout, 10);  // at once, no wait
    } else {
      EXPECT_EQ(outcome, FailOutcome::kDeadLettered);
    }
  }
  EXPECT_TRUE(q.reclaim("z", milliseconds(0), 10).empty());
  EXPECT_TRUE(q.lease("z", 10, milliseconds(0)).empty());
  const auto dead = q.dead_letters(10);
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].task_id, "bad");
  EXPECT_EQ(dead[0].payload, std::string("p\0", 2));
  EXPECT_EQ(dead[0].error, "boom 3");
  EXPECT_EQ(dead[0].deliveries, 3);
  EXPECT_EQ(dead[0].consumer, "w2");
  const QueueStats s = q.stats();
  EXPECT_EQ(s.length, 0);
  EXPECT_EQ(s.leased, 0);
  EXPECT_EQ(s.dead_letters, 1);
  EXPECT_EQ(s.dead_lettered_total, 1);
  EXPECT_EQ(s.failed_total, 3);
  EXPECT_EQ(s.results, 0);
}

TEST_F(LeaseQueueTest, ReleasedLeaseIsRedeliveredAtOnceWithoutCountingTheDelivery) {
  LeaseQueueOptions o = options();
  o.max_deliveries = 2;
  auto q = make_queue(o);
  q.enqueue("preempted", "p");
  auto leases = q.lease("a", 1, milliseconds(0));
  // Preempted more often than max_deliveries: never dead-lettered, always handed on.
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(leases.size(), 1u) << "round " << i;
    EXPECT_EQ(leases[0].delivery_count, 1);
    EXPECT_TRUE(q.release(leases[0]));
    EXPECT_FALSE(q.release(leases[0])) << "a released lease is no longer held";
    EXPECT_FALSE(q.extend(leases[0]));
    leases = q.reclaim("w" + std::to_string(i), kLeaseTimeout, 10);
  }
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_FALSE(q.release(Lease{leases[0].entry_id, "preempted", "p", "stranger", 1}));
  EXPECT_TRUE(q.complete(leases[0], "done").acked);
  EXPECT_FALSE(q.release(leases[0]));
  EXPECT_EQ(q.stats().dead_letters, 0);
}

TEST_F(LeaseQueueTest, TaskWhoseLeasesKeepExpiringIsDeadLettered) {
  LeaseQueueOptions o = options();
  o.max_deliveries = 2;
  auto q = make_queue(o);
  q.enqueue("crashy", "p");
  q.enqueue("fine", "p");
  ASSERT_EQ(q.lease("a", 1, milliseconds(0)).size(), 1u);  // "crashy" (first in)
  std::vector<Lease> b;
  ASSERT_TRUE(
      wait_for([&] { return !(b = q.reclaim("b", kLeaseTimeout, 10)).empty(); }, kPatience));
  EXPECT_EQ(b[0].task_id, "crashy");
  EXPECT_EQ(b[0].delivery_count, 2);
  // b dies too: the third delivery would exceed max_deliveries, so the reclaim that finds it
  // expired dead-letters it instead of handing it out.
  ASSERT_TRUE(wait_for(
      [&] {
        EXPECT_TRUE(q.reclaim("c", kLeaseTimeout, 10).empty());
        return q.stats().dead_letters == 1;
      },
      kPatience));
  const auto dead = q.dead_letters(10);
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].task_id, "crashy");
  EXPECT_EQ(dead[0].deliveries, 2);
  EXPECT_EQ(dead[0].consumer, "b");
  EXPECT_NE(dead[0].error.find("lease expired"), std::string::npos) << dead[0].error;
  // The other task is untouched.
  const auto rest = q.lease("c", 10, milliseconds(0));
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].task_id, "fine");
}

TEST_F(LeaseQueueTest, ReclaimFromDeadConsumerTakesAllItsLeasesAtOnce) {
  auto q = make_queue();
  for (int i = 0; i < 7; ++i)
    q.enqueue("t" + std::to_string(i), "p");
  const auto a = q.lease("dead", 5, milliseconds(0));
  const auto b = q.lease("alive", 2, milliseconds(0));
  ASSERT_EQ(a.size(), 5u);
  ASSERT_EQ(b.size(), 2u);

  const auto c = q.reclaim_from("dead", "c", 100);  // no waiting for the lease timeout
  ASSERT_EQ(c.size(), 5u);
  std::set<std::string> from_dead, reclaimed;
  for (const auto& l : a)
    from_dead.insert(l.task_id);
  for (const auto& l : c) {
    reclaimed.insert(l.task_id);
    EXPECT_EQ(l.delivery_count, 2);
    EXPECT_EQ(l.consumer, "c");
  }
  EXPECT_EQ(reclaimed, from_dead);
  for (const auto& l : b)
    EXPECT_TRUE(q.extend(l)) << "other consumers keep their leases";
  for (const auto& l : a)
    EXPECT_EQ(q.fail(l, "late"), FailOutcome::kNotHeld);

  redis::RedisClient raw(server().client_options());
  const auto consumers =
      raw.command({"XINFO", "CONSUMERS", options().key_prefix + ":tasks", options().group});
  for (const auto& info : consumers.as_array()) {
    EXPECT_NE(info.as_array().at(1).as_string(), "dead") << "the dead consumer is forgotten";
  }
  for (const auto& l : c)
    EXPECT_TRUE(q.complete(l, "r").recorded);
  EXPECT_EQ(q.stats().leased, 2);
}

TEST_F(LeaseQueueTest, StatsReportOldestLeaseAge) {
  auto q = make_queue();
  EXPECT_EQ(q.stats().oldest_lease_age, milliseconds(0));
  q.enqueue("t", "p");
  q.enqueue("u", "p");
  const auto leases = q.lease("a", 1, milliseconds(0));
  ASSERT_TRUE(wait_for([&] { return q.stats().oldest_lease_age >= milliseconds(50); }, kPatience));
  const QueueStats s = q.stats();
  EXPECT_EQ(s.length, 2);
  EXPECT_EQ(s.leased, 1);
  EXPECT_EQ(s.waiting, 1);
  q.complete(leases[0], "r");
  EXPECT_EQ(q.stats().oldest_lease_age, milliseconds(0));
}

TEST_F(LeaseQueueTest, GroupIsRecreatedWhenItsKeysVanish) {
  auto q = make_queue();
  q.enqueue("t", "p");
  ASSERT_EQ(q.lease("a", 1, milliseconds(0)).size(), 1u);
  q.destroy();
  EXPECT_TRUE(q.lease("a", 1, milliseconds(0)).empty());
  redis::RedisClient raw(server().client_options());
  raw.command({"DEL", options().key_prefix + ":tasks"});  // behind the queue's back
  q.enqueue("u", "p");
  const auto leases = q.lease("a", 1, milliseconds(0));
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0].task_id, "u");
}

// A task no retry can fix (e.g. forged) is dead-lettered at its first delivery, with the reason.
TEST_F(LeaseQueueTest, RejectDeadLettersAtOnceWithTheReason) {
  auto q = make_queue();
  q.enqueue("forged", "payload");
  const auto leases = q.lease("w1", 1);
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(q.reject(leases[0], "unsigned task"), FailOutcome::kDeadLettered);
  EXPECT_EQ(q.reject(leases[0], "again"), FailOutcome::kNotHeld);
  const auto dead = q.dead_letters(10);
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].task_id, "forged");
  EXPECT_EQ(dead[0].error, "unsigned task");
  EXPECT_EQ(dead[0].deliveries, 1);
  EXPECT_TRUE(q.reclaim("w2", milliseconds(0), 10).empty());
  EXPECT_EQ(q.stats().length, 0);
}

// A poisoned result (written by anyone with write access to the results) is moved aside with its
// reason and the task runs again; a completed task comes back with the payload it was first
// enqueued with, a task still leased is left to its holder.
TEST_F(LeaseQueueTest, QuarantineMovesAPoisonedResultAsideAndRequeuesTheTask) {
  auto q = make_queue();
  q.enqueue("done", "payload-done");
  q.enqueue("leased", "payload-leased");
  auto leases = q.lease("w1", 2);
  ASSERT_EQ(leases.size(), 2u);
  redis::RedisClient attacker(server().client_options());
  attacker.command({"HSET", options().key_prefix + ":results", "done", "garbage"});
  // The honest explorer finishes: its result is a duplicate of the garbage.
  EXPECT_TRUE(q.complete(leases[0], "good").duplicate());
  attacker.command({"HSET", options().key_prefix + ":results", "leased", "garbage-2"});

  // Only the bytes the caller judged are moved.
  EXPECT_FALSE(q.quarantine("done", "other bytes", "x").quarantined);
  const auto done = q.quarantine("done", "garbage", "not a seed_result");
  EXPECT_TRUE(done.quarantined);
  EXPECT_TRUE(done.requeued);
  EXPECT_FALSE(q.result("done"));
  const auto leased = q.quarantine("leased", "garbage-2", "wrong seed");
  EXPECT_TRUE(leased.quarantined);
  EXPECT_FALSE(leased.requeued);
  EXPECT_TRUE(leased.still_queued);  // w1 still holds it and will complete it

  const auto again = q.lease("w2", 5);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].task_id, "done");
  EXPECT_EQ(again[0].payload, "payload-done");
  EXPECT_TRUE(q.complete(again[0], "good").recorded);
  EXPECT_TRUE(q.complete(leases[1], "good-2").recorded);
  EXPECT_EQ(q.result("done"), "good");
  EXPECT_EQ(q.result("leased"), "good-2");

  const auto moved = q.quarantined(10);
  ASSERT_EQ(moved.size(), 2u);
  EXPECT_EQ(moved[0].task_id, "done");
  EXPECT_EQ(moved[0].reason, "not a seed_result");
  EXPECT_EQ(moved[0].result, "garbage");
  const auto s = q.stats();
  EXPECT_EQ(s.quarantined_total, 2);
  EXPECT_EQ(s.requeued_total, 1);
  EXPECT_EQ(s.length, 0);
  // A task never enqueued has no payload to run again.
  attacker.command({"HSET", options().key_prefix + ":results", "ghost", "garbage"});
  const auto ghost = q.quarantine("ghost", "garbage", "unknown task");
  EXPECT_TRUE(ghost.quarantined);
  EXPECT_FALSE(ghost.requeued);
  EXPECT_FALSE(ghost.still_queued);
}

TEST_F(LeaseQueueTest, PurgeRemovesOnlyUnrunTasksAndKeepsTheAccountingExact) {
  auto q = make_queue();
  for (const char* id : {"waiting", "leased", "released", "done", "dead"})
    q.enqueue(id, std::string("payload-") + id);
  // Lease in FIFO order: waiting is enqueued first, so take the first four and give one back.
  std::map<std::string, Lease> held;
  for (const Lease& l : q.lease("w", 5, milliseconds(0)))
    held[l.task_id] = l;
  ASSERT_EQ(held.size(), 5u);
  // Hand "waiting" back too (a preemption before it ran): it waits again, parked.
  ASSERT_TRUE(q.release(held["waiting"]));
  ASSERT_TRUE(q.release(held["released"]));
  ASSERT_TRUE(q.complete(held["done"], "r").acked);
  ASSERT_EQ(q.reject(held["dead"], "forged"), FailOutcome::kDeadLettered);
  q.enqueue("fresh", "payload-fresh");  // never delivered

  const std::vector<std::string> ids{"waiting", "leased", "released", "done",
                                     "dead",    "fresh",  "unknown"};
  EXPECT_TRUE(q.wait_result_notice(milliseconds(20)));  // "done"'s result rang it
  const auto purged = q.purge(ids, "iteration passed");
  EXPECT_EQ(std::set<std::string>(purged.begin(), purged.end()),
            (std::set<std::string>{"waiting", "released", "fresh"}));
  EXPECT_TRUE(q.wait_result_notice(milliseconds(20)))
      << "a purge wakes a trainer waiting for the results that will never come";
  EXPECT_TRUE(q.purge(ids, "again").empty()) << "purging is idempotent";
  EXPECT_FALSE(q.wait_result_notice(milliseconds(20))) << "purging nothing rings nothing";
  EXPECT_TRUE(q.purged("fresh"));
  EXPECT_FALSE(q.purged("leased"));
  EXPECT_FALSE(q.purged("done"));

  // The live holder still completes its lease; nothing purged is ever delivered or re-enqueued.
  EXPECT_TRUE(q.complete(held["leased"], "r2").acked);
  EXPECT_FALSE(q.enqueue("fresh", "payload-fresh").enqueued);
  EXPECT_TRUE(q.lease("w2", 10, milliseconds(0)).empty());
  EXPECT_TRUE(q.reclaim("w3", milliseconds(0), 10).empty());
  EXPECT_EQ(q.result("done"), "r");

  const QueueStats s = q.stats();
  EXPECT_EQ(s.purged_total, 3);
  EXPECT_EQ(s.length, 0);
  EXPECT_EQ(s.enqueued_total + s.requeued_total,
            s.acked_total + s.dead_lettered_total + s.purged_total + s.length);
}

// Whoever can write the stream by hand (a buggy client, the owner's credentials) can acknowledge
// or delete entries it never leased. reconcile() finds each such task (neither waiting, leased,
// completed, dead-lettered nor purged) and enqueues it again with its first payload; the tasks
// that are fine are left as they are, and the accounting holds again.
TEST_F(LeaseQueueTest, ReconcileEnqueuesAgainTasksAcknowledgedOrDeletedByHand) {
  auto q = make_queue();
  for (const char* id :
       {"done", "acked", "deleted", "leased", "dead", "waiting-deleted", "waiting", "purged"})
    q.enqueue(id, std::string("payload-") + id);
  std::map<std::string, Lease> held;
  for (const Lease& l : q.lease("a", 5, milliseconds(0)))
    held[l.task_id] = l;
  ASSERT_EQ(held.size(), 5u);
  ASSERT_TRUE(q.complete(held["done"], "r").acked);
  ASSERT_EQ(q.purge(std::vector<std::string>{"purged"}, "passed").size(), 1u);
  redis::RedisClient rogue(server().client_options());
  const std::string stream = options().key_prefix + ":" + options().stream;
  rogue.command({"XACK", stream, options().group, held["acked"].entry_id});
  rogue.command({"XDEL", stream, held["deleted"].entry_id});
  const auto waiting_deleted = q.enqueue("waiting-deleted", "").entry_id;  // a no-op: its id
  rogue.command({"XDEL", stream, waiting_deleted});
  ASSERT_EQ(q.reject(held["dead"], "forged"), FailOutcome::kDeadLettered);
  // Before: the accounting is off (and nothing would deliver the three again).
  QueueStats s = q.stats();
  EXPECT_NE(s.enqueued_total + s.requeued_total,
            s.acked_total + s.dead_lettered_total + s.purged_total + s.length);

  const std::vector<std::string> ids{"done",   "acked",           "deleted",
                                     "leased", "waiting-deleted", "waiting",
                                     "dead",   "purged",          "never-enqueued"};
  const Reconciliation r = q.reconcile(ids);
  EXPECT_EQ(std::set<std::string>(r.requeued.begin(), r.requeued.end()),
            (std::set<std::string>{"acked", "deleted", "waiting-deleted"}));
  EXPECT_EQ(r.lost, std::vector<std::string>{"never-enqueued"});
  EXPECT_TRUE(q.reconcile(ids).requeued.empty()) << "nothing vanished since";

  std::map<std::string, Lease> again;
  for (const Lease& l : q.lease("b", 10, milliseconds(0)))
    again[l.task_id] = l;
  ASSERT_EQ(again.size(), 4u);
  for (const char* id : {"acked", "deleted", "waiting-deleted", "waiting"}) {
    ASSERT_TRUE(again.count(id)) << id;
    EXPECT_EQ(again[id].payload, std::string("payload-") + id);
    EXPECT_TRUE(q.complete(again[id], "r").acked);
  }
  EXPECT_TRUE(q.complete(held["leased"], "r").acked);
  s = q.stats();
  EXPECT_EQ(s.reconciled_total, 3);
  EXPECT_EQ(s.length, 0);
  // The hand-acknowledged entry was deleted by reconcile(), not acknowledged by the queue: the
  // accounting counts what the queue itself did.
  EXPECT_EQ(s.enqueued_total + s.requeued_total,
            s.acked_total + s.dead_lettered_total + s.purged_total + s.length);
}

// A waiter (the trainer) must tell a dead-lettered task from one still running: it reads as
// abandoned with the dead letter's error, and the step that dead-lettered it rang the result bell.
// A task that completed, failed once (retried), waits or is leased does not.
TEST_F(LeaseQueueTest, RejectedTaskReadsAsDeadLetteredAndRingsTheBell) {
  auto q = make_queue();       // max_deliveries = 3
  auto waiter = make_queue();  // the trainer's own connection
  for (const char* id : {"rejected", "done", "failed-once", "leased", "waiting"})
    q.enqueue(id, "p");
  std::map<std::string, Lease> held;
  for (const Lease& l : q.lease("w", 4, milliseconds(0)))
    held[l.task_id] = l;
  ASSERT_EQ(held.size(), 4u);
  const std::vector<std::string> ids{"rejected", "done",    "failed-once",
                                     "leased",   "waiting", "unknown"};
  EXPECT_EQ(waiter.abandoned(ids), std::vector<std::optional<Abandoned>>(ids.size()));

  ASSERT_TRUE(q.complete(held["done"], "r").recorded);
  EXPECT_TRUE(waiter.wait_result_notice(kPatience));
  ASSERT_EQ(q.fail(held["failed-once"], "transient"), FailOutcome::kRetry);
  EXPECT_FALSE(waiter.wait_result_notice(milliseconds(20))) << "a retry is no news for a waiter";

  ASSERT_EQ(q.reject(held["rejected"], "outside the run's limits"), FailOutcome::kDeadLettered);
  EXPECT_TRUE(waiter.wait_result_notice(kPatience)) << "dead-lettering rings the result bell";
  const auto how = waiter.abandoned(ids);
  ASSERT_EQ(how.size(), ids.size());
  ASSERT_TRUE(how[0]);
  EXPECT_EQ(how[0]->how, Abandonment::kDeadLettered);
  EXPECT_EQ(how[0]->reason, "outside the run's limits");
  for (std::size_t i = 1; i < ids.size(); ++i)
    EXPECT_FALSE(how[i]) << ids[i];
  EXPECT_FALSE(waiter.purged("rejected")) << "dead-lettered is not purged";

  const QueueStats s = q.stats();
  EXPECT_EQ(s.dead_lettered_total, 1);
  EXPECT_EQ(s.enqueued_total + s.requeued_total,
            s.acked_total + s.dead_lettered_total + s.purged_total + s.length);
}

TEST_F(LeaseQueueTest, TaskFailedPastMaxDeliveriesReadsAsDeadLetteredAndRingsTheBell) {
  auto q = make_queue();  // max_deliveries = 3
  auto waiter = make_queue();
  q.enqueue("bad", "p");
  const std::vector<std::string> ids{"bad"};
  auto leases = q.lease("a", 1, milliseconds(0));
  for (int delivery = 1; delivery <= 3; ++delivery) {
    ASSERT_EQ(leases.size(), 1u) << "delivery " << delivery;
    const FailOutcome outcome = q.fail(leases[0], "boom " + std::to_string(delivery));
    if (delivery < 3) {
      ASSERT_EQ(outcome, FailOutcome::kRetry);
      EXPECT_FALSE(waiter.abandoned(ids)[0]) << "delivery " << delivery << " may still succeed";
      EXPECT_FALSE(waiter.wait_result_notice(milliseconds(20))) << "delivery " << delivery;
      leases = q.reclaim("w" + std::to_string(delivery), kLeaseTimeout, 10);
    } else {
      ASSERT_EQ(outcome, FailOutcome::kDeadLettered);
    }
  }
  EXPECT_TRUE(waiter.wait_result_notice(kPatience));
  const auto how = waiter.abandoned(ids);
  ASSERT_EQ(how.size(), 1u);
  ASSERT_TRUE(how[0]);
  EXPECT_EQ(how[0]->how, Abandonment::kDeadLettered);
  EXPECT_EQ(how[0]->reason, "boom 3");
}

// A poison task kills every holder: reclaim() (idle leases) and reclaim_from() (a dead consumer)
// dead-letter it past max_deliveries, in the same step that marks it and rings the bell.
TEST_F(LeaseQueueTest, TaskReclaimedPastMaxDeliveriesReadsAsDeadLetteredAndRingsTheBell) {
  LeaseQueueOptions o = options();
  o.max_deliveries = 2;
  auto q = make_queue(o);
  auto waiter = make_queue(o);
  q.enqueue("poison", "p");
  ASSERT_EQ(q.lease("a", 1, milliseconds(0)).size(), 1u);
  ASSERT_EQ(q.reclaim("b", milliseconds(0), 10).size(), 1u);  // "a" died: delivery 2
  EXPECT_FALSE(waiter.wait_result_notice(milliseconds(20)));
  EXPECT_FALSE(waiter.abandoned(std::vector<std::string>{"poison"})[0]);
  EXPECT_TRUE(q.reclaim("c", milliseconds(0), 10).empty());  // "b" died too: dead-lettered
  EXPECT_TRUE(waiter.wait_result_notice(kPatience));
  auto how = waiter.abandoned(std::vector<std::string>{"poison"});
  ASSERT_TRUE(how.at(0));
  EXPECT_EQ(how[0]->how, Abandonment::kDeadLettered);
  EXPECT_NE(how[0]->reason.find("lease expired after 2 deliveries"), std::string::npos)
      << how[0]->reason;

  q.enqueue("poison-2", "p");
  ASSERT_EQ(q.lease("d", 1, milliseconds(0)).size(), 1u);
  ASSERT_EQ(q.reclaim_from("d", "e", 10).size(), 1u);  // delivery 2
  EXPECT_FALSE(waiter.wait_result_notice(milliseconds(20)));
  EXPECT_TRUE(q.reclaim_from("e", "f", 10).empty());  // dead-lettered
  EXPECT_TRUE(waiter.wait_result_notice(kPatience));
  how = waiter.abandoned(std::vector<std::string>{"poison-2"});
  ASSERT_TRUE(how.at(0));
  EXPECT_EQ(how[0]->how, Abandonment::kDeadLettered);

  const QueueStats s = q.stats();
  EXPECT_EQ(s.dead_lettered_total, 2);
  EXPECT_EQ(s.enqueued_total + s.requeued_total,
            s.acked_total + s.dead_lettered_total + s.purged_total + s.length);
}

// A dead-lettered task whose expired holder still completed it has a result; once that result is
// quarantined and the task enqueued again, it runs again and is no longer abandoned.
TEST_F(LeaseQueueTest, QuarantineRequeueForgetsThatATaskWasDeadLettered) {
  auto q = make_queue();
  q.enqueue("t", "payload-t");
  const auto first = q.lease("slow", 1, milliseconds(0));
  ASSERT_EQ(first.size(), 1u);
  const auto second = q.reclaim_from("slow", "fast", 10);
  ASSERT_EQ(second.size(), 1u);
  ASSERT_EQ(q.reject(second[0], "forged"), FailOutcome::kDeadLettered);
  EXPECT_TRUE(q.complete(first[0], "garbage").recorded);  // the expired holder, late
  ASSERT_TRUE(q.abandoned(std::vector<std::string>{"t"})[0]);
  const auto moved = q.quarantine("t", "garbage", "wrong seed");
  ASSERT_TRUE(moved.requeued);
  EXPECT_FALSE(q.abandoned(std::vector<std::string>{"t"})[0]);
  const auto again = q.lease("w", 1, milliseconds(0));
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].payload, "payload-t");
}

// abandoned() answers in the order asked, also past the script's slice of 1000 ids.
TEST_F(LeaseQueueTest, AbandonedAnswersManyIdsInOrder) {
  auto q = make_queue();
  q.enqueue("dead", "p");
  q.enqueue("purged", "p");
  const auto leases = q.lease("w", 1, milliseconds(0));
  ASSERT_EQ(leases.size(), 1u);
  ASSERT_EQ(q.reject(leases[0], "forged"), FailOutcome::kDeadLettered);
  ASSERT_EQ(q.purge(std::vector<std::string>{"purged"}, "not needed").size(), 1u);
  std::vector<std::string> ids;
  for (int i = 0; i < 2500; ++i)
    ids.push_back("unknown-" + std::to_string(i));
  ids[1500] = "purged";
  ids[2400] = "dead";
  const auto how = q.abandoned(ids);
  ASSERT_EQ(how.size(), ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i == 1500) {
      EXPECT_EQ(how[i], (Abandoned{Abandonment::kPurged, "not needed"}));
    } else if (i == 2400) {
      EXPECT_EQ(how[i], (Abandoned{Abandonment::kDeadLettered, "forged"}));
    } else {
      ASSERT_FALSE(how[i]) << ids[i];
    }
  }
  EXPECT_TRUE(q.abandoned({}).empty());
}

TEST_F(LeaseQueueTest, ResultsReadsManyInOrder) {
  auto q = make_queue();
  q.enqueue("a", "p");
  q.enqueue("b", "p");
  for (const Lease& l : q.lease("w", 2, milliseconds(0)))
    q.complete(l, "result-" + l.task_id);
  const std::vector<std::string> ids{"b", "missing", "a"};
  const auto r = q.results(ids);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], "result-b");
  EXPECT_EQ(r[1], std::nullopt);
  EXPECT_EQ(r[2], "result-a");
}

TEST_F(LeaseQueueTest, InvalidOptionsNameTheField) {
  auto expect_field = [](LeaseQueueOptions o, const std::string& field) {
    try {
      o.validate();
      ADD_FAILURE() << "expected InvalidQueueOptions for " << field;
    } catch (const InvalidQueueOptions& e) {
      EXPECT_EQ(e.field(), field) << e.what();
    }
  };
  LeaseQueueOptions o;
  o.key_prefix = "";
  expect_field(o, "key_prefix");
  o = {};
  o.max_deliveries = 0;
  expect_field(o, "max_deliveries");
  o = {};
  o.lease_timeout = milliseconds(0);
  expect_field(o, "lease_timeout");
  o = {};
  o.results = "stats";
  expect_field(o, "results");
  o = {};
  o.dead_letter_stream = "dead_ids";  // the dead-lettered tasks' hash
  expect_field(o, "dead_letter_stream");
  EXPECT_THROW(RedisLeaseQueue(redis::RedisOptions{}, o), InvalidQueueOptions);
  EXPECT_NO_THROW(LeaseQueueOptions{}.validate());
  auto q = make_queue();
  EXPECT_THROW(q.lease("a", 0, milliseconds(0)), QueueError);
}

// Own servers: these tests kill Redis.

TEST(LeaseQueueDurabilityTest, RestartWithAofKeepsAcknowledgedResultsAndPendingLeases) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  RedisServer server;  // appendonly yes, appendfsync always
  LeaseQueueOptions o;
  o.key_prefix = "durable";
  o.lease_timeout = kLeaseTimeout;
  RedisLeaseQueue q(server.client_options(), o);
  std::vector<Task> tasks;
  for (int i = 0; i < 50; ++i)
    tasks.push_back({"t" + std::to_string(i), "p" + std::to_string(i)});
  ASSERT_EQ(q.enqueue_many(tasks), 50);
  std::set<std::string> completed;
  for (const auto& l : q.lease("a", 30, milliseconds(0))) {
    ASSERT_TRUE(q.complete(l, "r-" + l.task_id).acked);
    completed.insert(l.task_id);
  }
  const auto in_flight = q.lease("a", 5, milliseconds(0));  // leased, never acknowledged
  ASSERT_EQ(in_flight.size(), 5u);

  server.kill();  // SIGKILL: no shutdown, no final fsync
  EXPECT_THROW(q.stats(), QueueUnavailable);
  server.start();

  const QueueStats s = q.stats();  // the same object reconnects
  EXPECT_EQ(s.results, 30);
  EXPECT_EQ(s.length, 20);
  EXPECT_EQ(s.leased, 5);
  EXPECT_EQ(s.acked_total, 30);
  for (const auto& t : completed)
    EXPECT_EQ(q.result(t), "r-" + t);

  // The unacknowledged are all still there; the acknowledged are never handed out again.
  std::set<std::string> remaining;
  for (const auto& l : q.reclaim_from("a", "b", 100))
    remaining.insert(l.task_id);
  for (const auto& l : q.lease("b", 100, milliseconds(0)))
    remaining.insert(l.task_id);
  EXPECT_EQ(remaining.size(), 20u);
  for (const auto& t : remaining)
    EXPECT_EQ(completed.count(t), 0u) << t;
}

TEST(LeaseQueueDurabilityTest, DeadRedisIsATypedErrorAndTheQueueRecovers) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  RedisServer server;
  LeaseQueueOptions o;
  o.key_prefix = "outage";
  RedisLeaseQueue q(server.client_options(), o);
  q.enqueue("before", "p");
  server.kill();
  try {
    q.enqueue("during", "p");
    FAIL() << "expected QueueUnavailable";
  } catch (const QueueUnavailable& e) {
    EXPECT_FALSE(e.is_timeout()) << e.what();
  }
  EXPECT_THROW(q.lease("a", 1, milliseconds(0)), QueueUnavailable);
  server.start();
  EXPECT_TRUE(q.enqueue("after", "p").enqueued);
  std::set<std::string> ids;
  for (const auto& l : q.lease("a", 10, milliseconds(0)))
    ids.insert(l.task_id);
  EXPECT_EQ(ids, (std::set<std::string>{"before", "after"}));
}

}  // namespace
}  // namespace spotlight::queue
