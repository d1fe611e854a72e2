#include "common/bus/versioned_follower.hpp"

#include <algorithm>

#include "common/bus/errors.hpp"

namespace spotlight::bus {

using Clock = std::chrono::steady_clock;

VersionedFollower::VersionedFollower(Subscriber& subscriber, std::vector<std::string> topics,
                                     SnapshotFn snapshot, FollowerOptions options)
    : subscriber_(subscriber),
      topics_(std::move(topics)),
      snapshot_(std::move(snapshot)),
      options_(options) {
  if (!snapshot_) throw BusError("VersionedFollower: snapshot function is empty");
  for (const auto& topic : topics_)
    state_[topic] = TopicState{};
}

bool VersionedFollower::start(std::chrono::milliseconds live_timeout) {
  if (!started_) {
    for (const auto& topic : topics_)
      subscriber_.subscribe(topic);
  }
  const bool live = subscriber_.wait_live(live_timeout);
  started_ = true;
  for (auto& [topic, state] : state_)
    state.resync_due = true;
  run_due_resyncs();
  return live;
}

std::optional<Notice> VersionedFollower::read_snapshot(const std::string& topic,
                                                       TopicState& state) {
  ++counters_.resyncs;
  std::optional<Notice> snap;
  try {
    snap = snapshot_(topic);
  } catch (...) {
    ++counters_.snapshot_errors;
    state.resync_due = true;
    throw;
  }
  state.resync_due = false;
  state.last_heard = Clock::now();
  if (snap) snap->topic = topic;
  return snap;
}

void VersionedFollower::deliver(Notice notice, TopicState& state) {
  state.version = notice.version;
  ready_.push_back(std::move(notice));
}

void VersionedFollower::run_due_resyncs() {
  const auto now = Clock::now();
  for (auto& [topic, state] : state_) {
    if (!state.resync_due && now - state.last_heard < options_.resync_interval) continue;
    auto snap = read_snapshot(topic, state);
    if (snap && snap->version > state.version) {
      ++counters_.from_snapshot;
      deliver(std::move(*snap), state);
    }
  }
}

void VersionedFollower::on_notice(Notice notice) {
  const auto it = state_.find(notice.topic);
  if (it == state_.end()) return;  // not ours (the subscriber may serve other readers' topics)
  TopicState& state = it->second;
  state.last_heard = Clock::now();
  if (notice.version <= state.version) {
    ++counters_.stale;
    return;
  }
  if (notice.version == state.version + 1) {
    deliver(std::move(notice), state);
    return;
  }
  // Gap: some versions were lost. The snapshot may be newer still; deliver the newest state.
  ++counters_.gaps;
  std::optional<Notice> snap;
  try {
    snap = read_snapshot(it->first, state);
  } catch (...) {
    deliver(std::move(notice), state);  // newer than anything delivered; the resync retries
    throw;
  }
  if (snap && snap->version > notice.version) {
    ++counters_.from_snapshot;
    deliver(std::move(*snap), state);
  } else {
    deliver(std::move(notice), state);
  }
}

Clock::time_point VersionedFollower::next_resync_due(Clock::time_point now) const {
  auto due = Clock::time_point::max();
  for (const auto& [topic, state] : state_) {
    due = std::min(due, state.resync_due ? now : state.last_heard + options_.resync_interval);
  }
  return due;
}

std::optional<Notice> VersionedFollower::next(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  if (!started_) start(timeout);
  for (;;) {
    if (!ready_.empty()) {
      Notice n = std::move(ready_.front());
      ready_.pop_front();
      ++counters_.delivered;
      return n;
    }
    run_due_resyncs();
    if (!ready_.empty()) continue;
    const auto now = Clock::now();
    if (now >= deadline) return std::nullopt;
    const auto wait_until = std::min(deadline, next_resync_due(now));
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(
        std::max(wait_until - now, Clock::duration::zero()));
    if (auto n = subscriber_.receive(wait)) on_notice(std::move(*n));
  }
}

std::uint64_t VersionedFollower::version(const std::string& topic) const {
  const auto it = state_.find(topic);
  return it == state_.end() ? 0 : it->second.version;
}

}  // namespace spotlight::bus
