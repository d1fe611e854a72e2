#pragma once
// The lease queue (docs/preemption.md): tasks are pulled under leases; only unacknowledged
// leases are ever re-run; results are recorded idempotently before the acknowledgement.
//
// Life of a task:
//   enqueue(task, payload)               waiting; enqueueing a known task id again is a no-op
//   lease(consumer, n, block)            leased to `consumer` (delivery_count = 1)
//   extend(lease)                        the holder keeps a long task from looking idle
//   complete(lease, result)              result recorded (first writer wins), then acknowledged:
//                                        gone from the queue, never delivered again
//   fail(lease, error)                   error kept; re-deliverable at once (next reclaim), or
//                                        dead-lettered if it already had max_deliveries
//   reject(lease, error)                 dead-lettered now with the error, whatever its deliveries
//                                        (a task no retry can fix: forged, unsigned)
//   release(lease)                       given back unfinished (preemption notice): re-deliverable
//                                        at once, and this delivery does not count
//   reclaim(consumer, min_idle, n)       leases idle >= min_idle (holder died or hung) move to
//                                        `consumer` (delivery_count + 1); a task that would exceed
//                                        max_deliveries goes to the dead-letter stream instead
//   reclaim_from(dead, consumer, n)      the same for every lease of one dead consumer, now
//   quarantine(task, result, reason)     a recorded result found invalid (poisoned): moved aside
//                                        with the reason, and the task enqueued again (with the
//                                        payload it was first enqueued with) unless it is still
//                                        waiting or leased
//   purge(tasks, reason)                 tasks nobody needs any more (an iteration the trainer has
//                                        passed, a prompt already explored enough) leave the queue
//                                        unrun if they are waiting or were given back; a task
//                                        leased to a live holder is left to complete. A purged
//                                        task is remembered (purged() is true, never enqueued
//                                        again) and counted apart: purged is not lost
//
//   reconcile(tasks)                     each of `tasks` that vanished (its entry acknowledged or
//                                        deleted by hand, its lease dropped: neither waiting,
//                                        leased, completed, dead-lettered nor purged) is enqueued
//                                        again with its first payload, and counted; completions and
//                                        dead letters of holders that may not acknowledge are
//                                        settled
//
// Dead-lettered and purged tasks are remembered with their reason: abandoned(ids) tells a consumer
// of results which of the tasks it waits for will never have one (until quarantine() enqueues a
// dead-lettered task again, which forgets that it was dead-lettered).
//
// Result notices: complete() that records a result also rings the queue's result bell (in the same
// atomic step), so does a purge() that purged something and every step that dead-letters a task
// (fail, reject, reclaim, reclaim_from: those results will never come), and
// wait_result_notice(timeout) blocks until it rang since the last call. The bell is one flag, not a
// count: many results between two waits wake one wait. A consumer of results (the trainer) waits on
// it instead of polling, and still re-reads what it misses after each timeout (a bell rung for
// results it already read, or one it took before a crash).
//
// Guarantees: a task is acknowledged at most once and only after its result is recorded;
// nothing acknowledged is delivered again; nothing unacknowledged is lost (it stays leased until
// completed, reclaimed or dead-lettered). A task may *run* more than once (a lease can expire
// while its holder still works): complete() tells the later runs they were duplicates.
// Accounting: every task enqueued (requeues included) ends acknowledged, dead-lettered or purged,
// or is still in the queue: enqueued_total + requeued_total ==
// acked_total + dead_lettered_total + purged_total + length, as long as only the queue's own
// operations touch its keys; reconcile() restores it after anything else did (a task deleted by
// hand is enqueued again, reconciled_total counts it apart).
//
// Holders without the right to acknowledge (a store whose access control denies them the raw
// acknowledgement, e.g. the explorer role of deploy/redis/users.acl): complete() records the
// result (it is readable at once, and the lease is no longer theirs) and dead-lettering records
// the dead letter, but the entry is acknowledged, and counted acked or dead-lettered, by the next
// reconcile() of a holder with the right (the planner), which must therefore run.
//
// Errors: QueueUnavailable when the store cannot be reached, QueueError otherwise (see
// common/queue/errors.hpp). Every operation is safe to retry after QueueUnavailable: enqueue and
// complete are idempotent, and leases whose reply was lost stay pending until reclaimed.
//
// Thread-compatible: implementations hold one connection; use one queue object per thread.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/queue/errors.hpp"

namespace spotlight::queue {

inline constexpr std::chrono::milliseconds kDefaultLeaseTimeout{30000};
inline constexpr std::chrono::milliseconds kDefaultBlockTimeout{1000};
inline constexpr int kDefaultMaxDeliveries = 5;

// Key layout (Redis): <key_prefix>:<stream> (tasks), <key_prefix>:<dead_letter_stream>,
// <key_prefix>:<results> (hash task id -> result), plus <key_prefix>:{index,errors,stats,
// payloads,quarantine,notices,purged,dead_ids} (payloads: task id -> payload as enqueued;
// quarantine: a stream of quarantined results and why; notices: the result bell, a list of at most
// one element; purged and dead_ids: task id -> why it was purged or dead-lettered).
struct LeaseQueueOptions {
  std::string key_prefix =
      "spotlight";  // one per run (and per queue), e.g. "spotlight:run-42:explore"
  std::string stream = "tasks";
  std::string group = "explorers";
  std::string dead_letter_stream = "dead";
  std::string results = "results";
  std::chrono::milliseconds lease_timeout = kDefaultLeaseTimeout;  // reclaim()'s usual min_idle
  std::chrono::milliseconds block_timeout = kDefaultBlockTimeout;  // lease()'s usual wait
  int max_deliveries = kDefaultMaxDeliveries;  // deliveries before a task is dead-lettered

  // Throws InvalidQueueOptions naming the first bad field.
  void validate() const;
};

struct Task {
  std::string task_id;
  std::string payload;  // opaque bytes
};

struct Lease {
  std::string entry_id;  // position in the queue (Redis stream id), unique per enqueue
  std::string task_id;
  std::string payload;
  std::string consumer;             // the holder
  std::int64_t delivery_count = 0;  // 1 on the first delivery, +1 per reclaim
};

struct EnqueueResult {
  std::string entry_id;   // of the new entry, or of the existing one (empty if already completed)
  bool enqueued = false;  // false: the task id was enqueued before (no-op)
};

struct Completion {
  bool recorded = false;  // this call wrote the result; false: one existed already (duplicate)
  bool acked = false;     // this call acknowledged the entry; false: it was already acknowledged
  bool duplicate() const { return !recorded; }
};

enum class FailOutcome {
  kRetry,  // error kept; the task is re-deliverable now (reclaim with min_idle <= lease_timeout)
  kDeadLettered,  // it had max_deliveries: moved to the dead-letter stream with the error
  kNotHeld,       // the lease is no longer held by lease.consumer (completed or reclaimed): ignored
};

struct DeadLetter {
  std::string entry_id;  // id in the dead-letter stream
  std::string task_id;
  std::string payload;
  std::string error;     // the last error passed to fail(), or why it was dead-lettered
  std::string consumer;  // the last holder
  std::int64_t deliveries = 0;
};

struct QuarantineOutcome {
  bool quarantined = false;   // the result was still `result` and is now moved aside
  bool requeued = false;      // the task was enqueued again
  bool still_queued = false;  // not requeued: it is still waiting or leased (it will complete)
  // quarantined && !requeued && !still_queued: no payload kept (enqueued before payloads were
  // kept, or never): the task cannot run again.
};

// How a task left the queue without a result: none will come from the queue.
enum class Abandonment {
  kPurged,        // purge(): nobody needed it any more (not lost)
  kDeadLettered,  // fail() or reclaim() past max_deliveries, or reject(): a problem to look at
};

struct Abandoned {
  Abandonment how = Abandonment::kPurged;
  std::string reason;  // purge()'s reason, or the error the dead letter carries
  bool operator==(const Abandoned&) const = default;
};

// What reconcile() did.
struct Reconciliation {
  std::vector<std::string> requeued;  // had vanished: enqueued again with their first payload
  std::vector<std::string> lost;      // had vanished, no payload kept (or never enqueued here)
  std::int64_t settled = 0;           // parked completions and dead letters acknowledged
};

struct QuarantinedResult {
  std::string entry_id;  // id in the quarantine stream
  std::string task_id;
  std::string reason;
  std::string result;  // the bytes that were recorded (the first 4096)
};

struct QueueStats {
  std::int64_t length = 0;   // tasks not acknowledged: waiting + leased
  std::int64_t leased = 0;   // tasks currently under a lease (pending)
  std::int64_t waiting = 0;  // tasks never delivered (length - leased)
  std::int64_t dead_letters = 0;
  std::int64_t results = 0;
  std::chrono::milliseconds oldest_lease_age{0};  // idle time of the stalest lease; 0 if none
  // Cumulative counters for the queue's keys (monitoring; `leased_total` may undercount if a
  // client dies between a *blocking* lease and counting it, the others are exact).
  std::int64_t enqueued_total = 0;
  std::int64_t leased_total = 0;  // deliveries, reclaims included
  std::int64_t acked_total = 0;
  std::int64_t reclaimed_total = 0;
  std::int64_t failed_total = 0;
  std::int64_t dead_lettered_total = 0;
  std::int64_t duplicate_results_total = 0;
  std::int64_t quarantined_total = 0;  // results moved aside by quarantine()
  std::int64_t requeued_total = 0;     // tasks enqueued again by quarantine()
  std::int64_t purged_total = 0;       // tasks removed unrun by purge()
  std::int64_t reconciled_total = 0;   // vanished tasks enqueued again by reconcile()
};

class LeaseQueue {
 public:
  virtual ~LeaseQueue() = default;

  // Adds a task unless its id was ever enqueued under this queue's keys (idempotent).
  virtual EnqueueResult enqueue(std::string_view task_id, std::string_view payload) = 0;
  // enqueue() for many tasks in few round trips; returns how many were new.
  virtual std::int64_t enqueue_many(std::span<const Task> tasks) = 0;

  // Up to max_count waiting tasks, leased to `consumer`; waits up to block_timeout (0: no wait)
  // for the first one. Empty when none arrived in time. Consumer names must be unique per worker.
  virtual std::vector<Lease> lease(std::string_view consumer, int max_count,
                                   std::chrono::milliseconds block_timeout) = 0;

  // Records `result` for lease.task_id unless one exists, then acknowledges the lease's entry,
  // atomically. Returns after both are durable in the store (as durable as its persistence).
  virtual Completion complete(const Lease& lease, std::string_view result) = 0;

  // Keeps the error and releases the lease for re-delivery, or dead-letters the task (above).
  virtual FailOutcome fail(const Lease& lease, std::string_view error) = 0;
  // Dead-letters the task now with `error` (kDeadLettered), or kNotHeld.
  virtual FailOutcome reject(const Lease& lease, std::string_view error) = 0;

  // Gives an unfinished lease back (e.g. on a preemption notice, after committing in-flight state
  // elsewhere): re-deliverable by the next reclaim() at once, and the delivery is not counted
  // towards max_deliveries. False: `lease.consumer` no longer held it (nothing changed).
  virtual bool release(const Lease& lease) = 0;

  // Resets the lease's idle time if `lease.consumer` still holds it. False: the lease was lost
  // (reclaimed by another consumer, completed, or dead-lettered); stop working on it.
  virtual bool extend(const Lease& lease) = 0;

  // Moves up to max_count leases idle for at least min_idle to `consumer` and returns them.
  virtual std::vector<Lease> reclaim(std::string_view consumer, std::chrono::milliseconds min_idle,
                                     int max_count) = 0;
  // Moves up to max_count leases held by `dead_consumer` to `consumer`, whatever their idle time
  // (its heartbeats stopped). `consumer` may equal `dead_consumer` (a restarted worker).
  virtual std::vector<Lease> reclaim_from(std::string_view dead_consumer, std::string_view consumer,
                                          int max_count) = 0;

  // The recorded result of a task, if any.
  virtual std::optional<std::string> result(std::string_view task_id) = 0;
  // result() of each id, in order, in one round trip where the store allows (the default calls
  // result() per id).
  virtual std::vector<std::optional<std::string>> results(std::span<const std::string> task_ids);
  // True when this queue rings a result bell (above); false: wait_result_notice() returns false
  // at once and callers poll.
  virtual bool has_result_notices() const { return false; }
  // Waits up to `timeout` for the result bell and takes it. True: a result was recorded since
  // the bell was last taken; false: none within `timeout` (or no bell, see has_result_notices).
  virtual bool wait_result_notice(std::chrono::milliseconds timeout);

  // Removes the tasks among `task_ids` that wait unrun (never delivered, or given back by fail()
  // or release()) and marks them purged with `reason`, atomically; tasks that are leased to a
  // holder, completed, dead-lettered or unknown are left as they are. Returns the ids it purged.
  // Idempotent: a purged task is not purged (nor enqueued) again. A queue that cannot purge
  // (the default) purges nothing, which only costs the work of running what was not needed.
  virtual std::vector<std::string> purge(std::span<const std::string> task_ids,
                                         std::string_view reason) {
    return {};
  }
  // For each of `task_ids`, in order, in one round trip where the store allows: how the task left
  // the queue without a result, or nullopt (waiting, leased, completed, never enqueued):
  //   for id in task_ids:
  //     out += purged(id) ? {kPurged, purge reason} : dead-lettered(id) ? {kDeadLettered, error}
  //                                                                       : nullopt
  // A dead-lettered task can still get a result from a duplicate run (a holder whose lease expired
  // completes late): read results first and trust a recorded one. The default (a queue that keeps
  // no such record) answers nullopt for every id.
  virtual std::vector<std::optional<Abandoned>> abandoned(std::span<const std::string> task_ids);
  // Finds which of `task_ids` vanished and enqueues them again (above), atomically, in one round
  // trip where the store allows; settles parked completions and dead letters first. For the owner
  // of the tasks (the planner), with the right to acknowledge. A queue that cannot lose tasks (the
  // default) has nothing to do.
  virtual Reconciliation reconcile(std::span<const std::string> task_ids) { return {}; }
  // Whether purge() removed the task (its result will never come): abandoned() of the one id.
  bool purged(std::string_view task_id);
  // Moves the recorded result of `task_id` aside with `reason` if it is still `result` (nothing
  // happens otherwise), then enqueues the task again unless it is still waiting or leased.
  // Atomic. For the consumer of results that found one invalid.
  virtual QuarantineOutcome quarantine(std::string_view task_id, std::string_view result,
                                       std::string_view reason) = 0;
  // Up to max_count quarantined results, oldest first.
  virtual std::vector<QuarantinedResult> quarantined(int max_count) = 0;
  virtual std::int64_t result_count() = 0;
  // Calls fn(task_id, result) for every recorded result (in no particular order; results
  // recorded during the walk may or may not be seen).
  virtual void for_each_result(
      const std::function<void(std::string_view task_id, std::string_view result)>& fn) = 0;
  // The last error passed to fail() for a task, if any.
  virtual std::optional<std::string> last_error(std::string_view task_id) = 0;
  // Up to max_count dead letters, oldest first.
  virtual std::vector<DeadLetter> dead_letters(int max_count) = 0;

  virtual QueueStats stats() = 0;
};

}  // namespace spotlight::queue
