#pragma once
// LeaseQueue on a Redis Stream with a consumer group (docs/contracts.md). Each script below is
// common/queue/lua/<operation>.lua (KEYS and ARGV named at its top).
//
//   enqueue        script: HSETNX-style index check, XADD
//   lease          script: XREADGROUP ... STREAMS s > + count (a lease = a pending entry); if
//                  nothing waits, XREADGROUP ... BLOCK b, then count
//   complete       script: HSETNX results, XACK, XDEL                 (result before ack, atomic)
//   fail           script: keep error; XCLAIM IDLE lease_timeout JUSTID, or dead-letter
//   release        script: if still the owner, XCLAIM IDLE lease_timeout RETRYCOUNT count-1 JUSTID
//   extend         script: if still the owner, XCLAIM JUSTID (idle -> 0, count unchanged)
//   reclaim        script: XAUTOCLAIM, dead-letter those past max_deliveries
//   reclaim_from   script: XPENDING of the dead consumer, XCLAIM, XGROUP DELCONSUMER when empty
//   reject         the fail script with no retry left
//                  (dead-lettering, in any of these scripts: XADD dead, XACK, XDEL, HSET dead_ids,
//                  ring the notices bell)
//   abandoned      script: HMGET purged, HMGET dead_ids
//   quarantine     script: if HGET results == result: HDEL, XADD quarantine; XADD the payload
//                  again unless the index's entry is still in the stream (then HDEL dead_ids)
//   reconcile      script: settle entries parked under "~done" / "~dead" (XACK, XDEL); per task:
//                  HEXISTS results, purged, dead_ids; HGET index; XRANGE, XPENDING of the entry
//                  against the group's last-delivered-id (XINFO GROUPS); a vanished task is
//                  XADDed again from payloads
//   purge          script: per task, the index's entry if still in the stream and not pending
//                  (or pending under "~released"): XACK, XDEL, HSET purged; counted
//
// A caller whose ACL denies XACK (checked in the scripts with redis.acl_check_cmd) parks what it
// completes under "~done" and what it dead-letters under "~dead" instead of acknowledging; those
// are never re-delivered and the next reconcile() acknowledges them.
// Leases given back by fail() (retry) or release() are parked under the consumer "~released"
// (consumer names starting with '~' are reserved) until a reclaim() re-delivers them.
// Acknowledged entries are deleted from the stream, so its length is the backlog. The consumer
// group is created (from the start of the stream) on first use and again if it disappears.
// Redis errors are translated: RedisUnavailable -> QueueUnavailable, RedisAuthError ->
// QueueAccessDenied, others -> QueueError.
// Thread-compatible (one connection): one RedisLeaseQueue per thread.

#include <array>
#include <string_view>

#include "common/queue/lease_queue.hpp"
#include "common/redis/client.hpp"

namespace spotlight::queue {

class RedisLeaseQueue final : public LeaseQueue {
 public:
  // Validates `options` (InvalidQueueOptions); does not connect until the first call.
  RedisLeaseQueue(redis::RedisOptions redis, LeaseQueueOptions options);
  RedisLeaseQueue(redis::RedisClient client, LeaseQueueOptions options);
  ~RedisLeaseQueue() override;

  EnqueueResult enqueue(std::string_view task_id, std::string_view payload) override;
  std::int64_t enqueue_many(std::span<const Task> tasks) override;
  std::vector<Lease> lease(std::string_view consumer, int max_count,
                           std::chrono::milliseconds block_timeout) override;
  Completion complete(const Lease& lease, std::string_view result) override;
  FailOutcome fail(const Lease& lease, std::string_view error) override;
  FailOutcome reject(const Lease& lease, std::string_view error) override;
  bool release(const Lease& lease) override;
  bool extend(const Lease& lease) override;
  std::vector<Lease> reclaim(std::string_view consumer, std::chrono::milliseconds min_idle,
                             int max_count) override;
  std::vector<Lease> reclaim_from(std::string_view dead_consumer, std::string_view consumer,
                                  int max_count) override;
  std::optional<std::string> result(std::string_view task_id) override;
  // One HMGET.
  std::vector<std::optional<std::string>> results(std::span<const std::string> task_ids) override;
  bool has_result_notices() const override { return true; }
  // BLPOP on <key_prefix>:notices (the socket timeout outlasts the block).
  bool wait_result_notice(std::chrono::milliseconds timeout) override;
  std::vector<std::string> purge(std::span<const std::string> task_ids,
                                 std::string_view reason) override;
  // One script: HMGET of purged, then of dead_ids.
  std::vector<std::optional<Abandoned>> abandoned(std::span<const std::string> task_ids) override;
  // One script (above).
  Reconciliation reconcile(std::span<const std::string> task_ids) override;
  QuarantineOutcome quarantine(std::string_view task_id, std::string_view result,
                               std::string_view reason) override;
  std::vector<QuarantinedResult> quarantined(int max_count) override;
  std::int64_t result_count() override;
  void for_each_result(const std::function<void(std::string_view, std::string_view)>& fn) override;
  std::optional<std::string> last_error(std::string_view task_id) override;
  std::vector<DeadLetter> dead_letters(int max_count) override;
  QueueStats stats() override;

  // Convenience with the options' defaults.
  std::vector<Lease> lease(std::string_view consumer, int max_count = 1) {
    return lease(consumer, max_count, options_.block_timeout);
  }
  std::vector<Lease> reclaim(std::string_view consumer, int max_count = 64) {
    return reclaim(consumer, options_.lease_timeout, max_count);
  }

  // Deletes every key of this queue (tasks, results, dead letters, counters). For tests and for
  // discarding a finished run; not atomic with concurrent users.
  void destroy();

  const LeaseQueueOptions& options() const { return options_; }

 private:
  struct Keys {
    std::string stream, dead, results, index, errors, stats, payloads, quarantine, notices, purged,
        dead_ids;
    // KEYS of the scripts that require lua/lib/dead_letter.lua, in the order it names them.
    std::array<std::string_view, 6> dead_letter() const;
  };
  FailOutcome fail_with(const Lease& lease, std::string_view error, int max_deliveries);
  template <typename Fn>
  auto call(Fn&& fn) -> decltype(fn());
  void ensure_group();

  LeaseQueueOptions options_;
  redis::RedisClient client_;
  Keys keys_;
  bool group_ready_ = false;
};

}  // namespace spotlight::queue
