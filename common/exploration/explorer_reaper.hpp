#pragma once
// The fast path for hard-killed explorers (SIGKILL, a vanished spot node): an explorer whose
// heartbeat is older than `dead_after` is dead, and its leases are handed back at once instead of
// waiting for them to expire (exploration.lease_timeout_ms, typically much longer).
//
//   reap(now):
//     for each explorer of the directory with a heartbeat < now - dead_after, not reaped before at
//     that heartbeat (an explorer without a readable heartbeat is not judged):
//       repeat: leases = queue.reclaim_from(id, reaper_consumer, batch)    (holder: the reaper)
//               for l in leases: queue.release(l)          (parked, re-deliverable by the next
//       until leases is empty                               reclaim() of any live explorer)
//
// reclaim_from() counts a delivery and release() takes it back, so a task's delivery count is
// what it was under the dead explorer: its death counts as one delivery, exactly as when its
// lease expires. A task already at max_deliveries is dead-lettered by reclaim_from() (also as on
// expiry); should a whole batch of them be dead-lettered at once, reclaim_from() returns nothing
// and the rest of that explorer's leases are left to expire. If the reaper itself dies between the
// two calls, the leases sit under `reaper_consumer` and are re-delivered when they expire; every
// reap() first hands back whatever `reaper_consumer` still holds.
//
// A live explorer whose heartbeat merely stalled loses its leases: harmless, because complete()
// of a lease that moved still records the result once (the later run is a duplicate).
// Heartbeats are wall-clock times written by other hosts: `dead_after` must exceed the clock skew.
//
// Errors: queue::QueueUnavailable / store::StoreUnavailable pass through (back off, retry; an
// explorer interrupted mid-reap is reaped again next time). Thread-compatible.

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/exploration/explorer_directory.hpp"
#include "common/queue/lease_queue.hpp"

namespace spotlight::exploration {

// Consumer names starting with '~' are never explorers (common/queue reserves them).
inline constexpr const char* kDefaultReaperConsumer = "~planner";
inline constexpr int kDefaultReapBatch = 256;

struct ReaperOptions {
  std::chrono::milliseconds dead_after{3000};  // 3 heartbeat periods
  std::string reaper_consumer = kDefaultReaperConsumer;
  int batch = kDefaultReapBatch;  // leases per reclaim_from() call, >= 1
};

struct ReapReport {
  int live_explorers = 0;           // heartbeat within dead_after
  int dead_explorers = 0;           // heartbeat older (reaped now or before)
  std::vector<std::string> reaped;  // dead explorers reaped by this call
  std::int64_t released = 0;        // leases handed back by this call
};

class ExplorerReaper {
 public:
  // `queue` and `directory` must outlive the reaper. Throws std::invalid_argument for bad options.
  ExplorerReaper(queue::LeaseQueue& queue, ExplorerDirectory& directory, ReaperOptions options);

  // One pass (above). `now_unix_ms`: the wall-clock time to judge heartbeats by.
  ReapReport reap(std::int64_t now_unix_ms);

  const ReaperOptions& options() const { return options_; }

 private:
  std::int64_t hand_back(const std::string& holder);

  queue::LeaseQueue& queue_;
  ExplorerDirectory& directory_;
  ReaperOptions options_;
  // Dead explorer id -> the heartbeat it was reaped at (-1: none), so each death is reaped once.
  std::map<std::string, std::int64_t> reaped_;
};

}  // namespace spotlight::exploration
