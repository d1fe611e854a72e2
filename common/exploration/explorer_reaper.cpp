#include "common/exploration/explorer_reaper.hpp"

#include <stdexcept>
#include <utility>

#include "common/log/log.hpp"

namespace spotlight::exploration {

ExplorerReaper::ExplorerReaper(queue::LeaseQueue& queue, ExplorerDirectory& directory,
                               ReaperOptions options)
    : queue_(queue), directory_(directory), options_(std::move(options)) {
  if (options_.dead_after.count() <= 0) {
    throw std::invalid_argument("ReaperOptions.dead_after: must be > 0");
  }
  if (options_.reaper_consumer.empty()) {
    throw std::invalid_argument("ReaperOptions.reaper_consumer: must not be empty");
  }
  if (options_.batch < 1) throw std::invalid_argument("ReaperOptions.batch: must be >= 1");
}

std::int64_t ExplorerReaper::hand_back(const std::string& holder) {
  std::int64_t released = 0;
  for (;;) {
    const auto leases = queue_.reclaim_from(holder, options_.reaper_consumer, options_.batch);
    if (leases.empty()) return released;
    for (const auto& lease : leases) {
      if (queue_.release(lease)) ++released;
    }
  }
}

ReapReport ExplorerReaper::reap(std::int64_t now_unix_ms) {
  ReapReport report;
  // Leftovers of a reaper that died between reclaim_from() and release().
  report.released += hand_back(options_.reaper_consumer);

  const std::int64_t cutoff = now_unix_ms - options_.dead_after.count();
  for (const auto& seen : directory_.explorers()) {
    // No readable heartbeat: starting, or gone cleanly (it erased its key). Not judged.
    if (seen.id == options_.reaper_consumer || !seen.heartbeat_unix_ms) continue;
    const std::int64_t heartbeat = *seen.heartbeat_unix_ms;
    if (heartbeat >= cutoff) {
      ++report.live_explorers;
      continue;
    }
    ++report.dead_explorers;
    const auto it = reaped_.find(seen.id);
    if (it != reaped_.end() && it->second == heartbeat) continue;
    const std::int64_t released = hand_back(seen.id);
    reaped_[seen.id] = heartbeat;  // only once every lease it held was handed back
    report.reaped.push_back(seen.id);
    report.released += released;
    if (released > 0) {
      log::warn("explorer {} is dead (last heartbeat {} ms ago): handed back {} leases", seen.id,
                now_unix_ms - heartbeat, released);
    }
  }
  return report;
}

}  // namespace spotlight::exploration
