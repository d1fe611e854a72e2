#pragma once
// WeightsPrefetcher: an explorer follows the trainer's "weights" topic and loads each new version
// before a task asks for it, so the first task that needs it finds it loaded.
//
// On its own thread (bus::FollowerThread; the snapshot is the weight store's latest version, so a
// lost notice, a restarted trainer or an explorer that joined late is caught up within
// bus.resync_ms), for every newer state:
//
//   n = WeightsNotice in the state;  v = n.version              (malformed: ignored, counted)
//   if weights.loaded() >= v: nothing                           (already as new)
//   m = store.manifest(v)            none: ignored (garbage-collected, or not this run's bus)
//   if m.checksum != n.checksum:     ignored (not this run's weights), counted
//   bytes = store.fetch(v)           verified against m (CorruptWeights: counted as corrupt)
//   weights.offer(v, bytes)          loads unless a batch pins the weights: then right after it
//
// Fetching and verifying never take the explorer's thread, and the load waits for the batch in
// hand to finish. An explorer that starts a batch while a load is under way waits for it (the
// batch may need that version) and keeps its heartbeat and leases alive meanwhile, so a prefetch
// never delays a heartbeat or a lease extension. The
// staleness bound is untouched: a prefetch only ever loads a newer version than the loaded one,
// and a task still gets a version within its bound from PolicyWeights::ensure() when the
// prefetch has not brought one (Redis unavailable, no bus: the path before this class).
//
// `store` is the prefetcher's own connection (one per thread); `weights` must outlive it. The
// destructor stops the thread (waits for a load in progress).

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/bus/follower_thread.hpp"
#include "common/run/bus_subscription.hpp"
#include "common/store/weight_store.hpp"
#include "services/explorer/policy_weights.hpp"

namespace spotlight::explorer {

struct PrefetchCounters {
  std::uint64_t loaded = 0;   // versions offered and loaded
  std::uint64_t ignored = 0;  // notices that named no version of this run (malformed, unknown,
                              // another checksum)
  std::uint64_t failed = 0;   // fetches that failed (Redis unavailable, corrupt blob)
  std::uint64_t notices = 0;  // states the follower delivered (notices and resyncs)
};

class WeightsPrefetcher {
 public:
  // Connects to bus.endpoint and starts following. Throws bus::BusError for a bad endpoint.
  WeightsPrefetcher(const run::BusSubscription& bus, store::WeightStore& store,
                    PolicyWeights& weights);
  ~WeightsPrefetcher();

  PrefetchCounters counters() const;
  // The follower's delivered count, to wait on (bus::FollowerThread::wait_newer).
  bus::FollowerThread& follower() { return *follower_; }

 private:
  std::optional<bus::Notice> snapshot();
  void on_state(const bus::Notice& state);

  store::WeightStore& store_;
  PolicyWeights& weights_;
  std::atomic<std::uint64_t> loaded_{0}, ignored_{0}, failed_{0}, notices_{0};
  std::unique_ptr<bus::FollowerThread> follower_;  // last: its thread uses the members above
};

}  // namespace spotlight::explorer
