#pragma once
// VersionedFollower: follows the latest state of some topics from bus notices plus a snapshot
// source, so that lost notices never lose state.
//
// The contract between a writer and its followers, per topic:
// - One writer. For each change it first stores the new state durably in the snapshot source
//   (Redis in production) with version v = previous + 1 (the first version is 1), then publishes
//   the notice {topic, v, payload}. Versions come from the store, so a restarted writer
//   continues the sequence instead of starting over.
// - A notice carries the whole state of its topic at its version (not a delta), and so does a
//   snapshot: a follower that missed versions needs only the newest.
// - snapshot(topic) returns the current durable state, or std::nullopt when there is none yet.
//   It may throw (store unreachable): the exception reaches the caller of start()/next(), the
//   topic stays due for resync, and the next call retries.
//
// What the follower guarantees: per topic, next() returns states in strictly increasing version
// order, never one version twice, and while next() is being called reaches the newest durable
// state within resync_interval (plus the snapshot read) even if every notice is lost. Versions in
// between may be skipped.
//
//   start():  subscribe(all topics); sub.wait_live(live_timeout)     // subscribe BEFORE reading
//             for each topic: resync(topic)                           // the snapshot: no gap
//   next(timeout):
//     until timeout:
//       if a state is queued: return it
//       for each topic due (flagged, or nothing heard for resync_interval): resync(topic)
//       n = sub.receive(until the next resync is due)
//       if n.version <= last[n.topic]:     ignore                     (stale or duplicate)
//       elif n.version == last[n.topic]+1: queue n
//       else:                              gap: queue newer of (n, snapshot(n.topic))
//   resync(topic): s = snapshot(topic); if s and s.version > last[topic]: queue s
//
// Not thread-safe (like the Subscriber it reads, which nothing else may read meanwhile).

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/bus/notice.hpp"
#include "common/bus/subscriber.hpp"

namespace spotlight::bus {

// Current durable state of `topic` (its version and payload), std::nullopt when none.
using SnapshotFn = std::function<std::optional<Notice>(const std::string& topic)>;

inline constexpr std::chrono::milliseconds kDefaultResyncInterval{10000};
inline constexpr std::chrono::milliseconds kDefaultLiveTimeout{5000};

struct FollowerOptions {
  // A topic with no notice (not even a stale one) for this long is re-read from the snapshot.
  std::chrono::milliseconds resync_interval = kDefaultResyncInterval;
};

struct FollowerCounters {
  std::uint64_t delivered = 0;        // states returned by next()
  std::uint64_t from_snapshot = 0;    // ... of which came from the snapshot source
  std::uint64_t stale = 0;            // notices ignored: version <= the last delivered
  std::uint64_t gaps = 0;             // notices that skipped versions
  std::uint64_t resyncs = 0;          // snapshot reads (start, gaps, quiet topics)
  std::uint64_t snapshot_errors = 0;  // snapshot reads that threw
};

class VersionedFollower {
 public:
  // `subscriber` must outlive the follower, be connected, and be read only by it. Throws
  // BusError when `snapshot` is empty.
  VersionedFollower(Subscriber& subscriber, std::vector<std::string> topics, SnapshotFn snapshot,
                    FollowerOptions options = {});

  // Subscribes, waits for the subscriptions to be live, then reads the snapshot of every topic.
  // Returns whether the subscriptions were confirmed within live_timeout; either way the state
  // is followed (until live, through resyncs). Throws what the snapshot throws.
  bool start(std::chrono::milliseconds live_timeout = kDefaultLiveTimeout);

  // The next newer state of any topic, or std::nullopt after `timeout`. Calls start() first if
  // it was not called. Throws what the snapshot throws.
  std::optional<Notice> next(std::chrono::milliseconds timeout);

  // The last version delivered for `topic` (0 when none).
  std::uint64_t version(const std::string& topic) const;

  const FollowerCounters& counters() const { return counters_; }

 private:
  struct TopicState {
    std::uint64_t version = 0;
    std::chrono::steady_clock::time_point last_heard{};
    bool resync_due = true;
  };

  // Reads the snapshot of `topic`; on success clears resync_due and returns it (topic field
  // filled in). On an exception sets resync_due and rethrows.
  std::optional<Notice> read_snapshot(const std::string& topic, TopicState& state);
  void run_due_resyncs();
  void on_notice(Notice notice);
  void deliver(Notice notice, TopicState& state);
  std::chrono::steady_clock::time_point next_resync_due(
      std::chrono::steady_clock::time_point now) const;

  Subscriber& subscriber_;
  std::vector<std::string> topics_;
  SnapshotFn snapshot_;
  FollowerOptions options_;
  bool started_ = false;
  std::map<std::string, TopicState> state_;
  std::deque<Notice> ready_;  // states to return, oldest first
  FollowerCounters counters_;
};

}  // namespace spotlight::bus
