#pragma once
// queue::LeaseQueue in memory on a caller-supplied clock, for the cluster simulator: the same
// contract as the Redis queue (common/queue/lease_queue.hpp) — leases, idempotent results,
// release, reclaim of idle leases, reclaim_from a dead consumer, the delivery limit and the
// dead-letter list, abandoned() for dead-lettered tasks; quarantine() moves a result aside but does
// not re-enqueue (payloads of acknowledged tasks are not kept); no purge, no result bell — so the
// simulated explorers and the real planner-side code (ExplorerReaper) drive the scheduling logic
// the services run. lease() never blocks (simulated time does not pass inside a call).
// Single-threaded. Leases cost O(1), reclaims and completions O(tasks leased).

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <set>
#include <string>

#include "common/queue/lease_queue.hpp"

namespace spotlight::simulator {

class MemoryLeaseQueue final : public queue::LeaseQueue {
 public:
  // `now_ms`: the simulation clock in milliseconds.
  MemoryLeaseQueue(queue::LeaseQueueOptions options, std::function<std::int64_t()> now_ms);

  queue::EnqueueResult enqueue(std::string_view task_id, std::string_view payload) override;
  std::int64_t enqueue_many(std::span<const queue::Task> tasks) override;
  std::vector<queue::Lease> lease(std::string_view consumer, int max_count,
                                  std::chrono::milliseconds block_timeout) override;
  queue::Completion complete(const queue::Lease& lease, std::string_view result) override;
  queue::FailOutcome fail(const queue::Lease& lease, std::string_view error) override;
  queue::FailOutcome reject(const queue::Lease& lease, std::string_view error) override;
  bool release(const queue::Lease& lease) override;
  bool extend(const queue::Lease& lease) override;
  std::vector<queue::Lease> reclaim(std::string_view consumer, std::chrono::milliseconds min_idle,
                                    int max_count) override;
  std::vector<queue::Lease> reclaim_from(std::string_view dead_consumer, std::string_view consumer,
                                         int max_count) override;
  std::optional<std::string> result(std::string_view task_id) override;
  std::vector<std::optional<queue::Abandoned>> abandoned(
      std::span<const std::string> task_ids) override;
  queue::QuarantineOutcome quarantine(std::string_view task_id, std::string_view result,
                                      std::string_view reason) override;
  std::vector<queue::QuarantinedResult> quarantined(int max_count) override;
  std::int64_t result_count() override;
  void for_each_result(const std::function<void(std::string_view, std::string_view)>& fn) override;
  std::optional<std::string> last_error(std::string_view task_id) override;
  std::vector<queue::DeadLetter> dead_letters(int max_count) override;
  queue::QueueStats stats() override;

 private:
  struct Entry {
    std::string entry_id;
    std::string task_id;
    std::string payload;
    std::string consumer;  // empty: never delivered (waiting)
    std::int64_t deliveries = 0;
    std::int64_t last_ms = 0;  // last delivery or extend
    bool released = false;     // re-deliverable by the next reclaim at once
  };
  using Entries = std::list<Entry>;
  Entries::iterator held(const queue::Lease& lease);
  queue::FailOutcome fail_with(const queue::Lease& lease, std::string_view error,
                               std::int64_t max_deliveries);
  void append(std::string_view task_id, std::string_view payload);
  queue::Lease to_lease(const Entry& e) const;
  // Moves `e` to `consumer` (or dead-letters it at the limit); true if it was leased.
  bool redeliver(Entries::iterator& e, std::string_view consumer, std::vector<queue::Lease>& out);

  queue::LeaseQueueOptions options_;
  std::function<std::int64_t()> now_ms_;
  // Not acknowledged, in enqueue order. Deliveries take the first waiting entry, so the waiting
  // ones are the suffix from first_waiting_: scans of leases only walk the prefix before it.
  Entries entries_;
  Entries::iterator first_waiting_ = entries_.end();
  std::set<std::string, std::less<>> known_;
  std::map<std::string, std::string, std::less<>> results_;
  std::map<std::string, std::string, std::less<>> errors_;
  std::vector<queue::DeadLetter> dead_;
  std::map<std::string, std::string, std::less<>> dead_ids_;  // task id -> dead letter's error
  std::vector<queue::QuarantinedResult> quarantined_;
  std::int64_t next_entry_ = 0;
  queue::QueueStats totals_;
};

}  // namespace spotlight::simulator
