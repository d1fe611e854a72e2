#pragma once
// FollowerThread: a VersionedFollower on a thread of its own, for services whose main loop must
// not block on the bus. It hands every newer state to `on_state` (on its thread) and lets other
// threads wait for "something newer than what I saw".
//
//   bus::FollowerThread weights(sub_options, endpoint, {"weights"}, snapshot_from_redis,
//                               [&](const bus::Notice& n) { prefetch(n); });
//   std::uint64_t seen = 0;
//   seen = weights.wait_newer(seen, 100ms, stop);   // returns early when a state is delivered
//
// The thread is equivalent to:
//
//   follower.start(live_timeout)                 // subscribe, confirm, read every snapshot
//   until stopped:
//     s = follower.next(tick)                    // notices, gaps, periodic resyncs
//     if s: on_state(s); delivered += 1; notify waiters
//     on an exception (snapshot or on_state): errors += 1; pause error_backoff; go on
//
// So the same guarantees hold as for VersionedFollower: per topic, states in increasing version
// order, and the newest durable state within resync_interval even if every notice is lost (a
// publisher that restarted, a subscriber that joined late). on_state must not throw for a
// state it wants to see again: a state is delivered once.
//
// Thread-safe: wait_newer(), delivered(), counters() from any thread. The destructor stops the
// thread (at most one `tick` plus whatever on_state is doing) and joins it.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "common/bus/subscriber.hpp"
#include "common/bus/versioned_follower.hpp"

namespace spotlight::bus {

struct FollowerThreadOptions {
  FollowerOptions follower;  // resync_interval: the recovery period
  // How long start() waits for the subscriptions to be confirmed. Unconfirmed is not an error:
  // notices flow once the subscription reaches the publisher, and resyncs cover the time before.
  // Also bounds how long the destructor can take while the publisher is unreachable.
  std::chrono::milliseconds live_timeout{100};
  std::chrono::milliseconds tick{100};            // longest receive; bounds how fast it stops
  std::chrono::milliseconds error_backoff{1000};  // pause after a snapshot / on_state error
};

struct FollowerThreadCounters {
  std::uint64_t delivered = 0;  // states handed to on_state
  std::uint64_t errors = 0;     // exceptions from the snapshot or on_state
  bool live = false;            // start() confirmed the subscriptions
};

class FollowerThread {
 public:
  using StateFn = std::function<void(const Notice&)>;

  // Connects a Subscriber (SubscriberOptions) to `endpoint` and starts the thread. Throws
  // BusError for an unusable endpoint or options, before any thread starts.
  FollowerThread(SubscriberOptions subscriber, const std::string& endpoint,
                 std::vector<std::string> topics, SnapshotFn snapshot, StateFn on_state,
                 FollowerThreadOptions options = {});
  ~FollowerThread();
  FollowerThread(const FollowerThread&) = delete;
  FollowerThread& operator=(const FollowerThread&) = delete;

  // Waits until more than `seen` states were delivered, `timeout` passes or `stop` is
  // requested; returns the number delivered so far (pass it back as `seen` next time).
  std::uint64_t wait_newer(std::uint64_t seen, std::chrono::milliseconds timeout,
                           std::stop_token stop = {});

  std::uint64_t delivered() const;
  FollowerThreadCounters counters() const;

 private:
  void run(std::stop_token stop);

  Subscriber subscriber_;
  VersionedFollower follower_;
  StateFn on_state_;
  FollowerThreadOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable_any changed_;
  FollowerThreadCounters counters_;
  std::jthread thread_;  // last: started after everything it uses exists
};

}  // namespace spotlight::bus
