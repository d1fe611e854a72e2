#include "common/bus/follower_thread.hpp"

#include <exception>
#include <utility>

#include "common/bus/errors.hpp"

namespace spotlight::bus {

FollowerThread::FollowerThread(SubscriberOptions subscriber, const std::string& endpoint,
                               std::vector<std::string> topics, SnapshotFn snapshot,
                               StateFn on_state, FollowerThreadOptions options)
    : subscriber_(std::move(subscriber)),
      follower_(subscriber_, std::move(topics), std::move(snapshot), options.follower),
      on_state_(std::move(on_state)),
      options_(options) {
  if (!on_state_) throw BusError("FollowerThread: on_state is empty");
  subscriber_.connect(endpoint);
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

FollowerThread::~FollowerThread() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

void FollowerThread::run(std::stop_token stop) {
  // Pauses `d` unless stop is requested meanwhile (a condition wait on the stop token).
  const auto pause = [&](std::chrono::milliseconds d) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, stop, d, [] { return false; });
  };
  bool started = false;
  while (!stop.stop_requested()) {
    try {
      if (!started) {
        const bool live = follower_.start(options_.live_timeout);
        started = true;
        std::lock_guard lock(mutex_);
        counters_.live = live;
      }
      auto state = follower_.next(options_.tick);
      if (!state) continue;
      on_state_(*state);
      {
        std::lock_guard lock(mutex_);
        ++counters_.delivered;
      }
      changed_.notify_all();
    } catch (const std::exception&) {
      {
        std::lock_guard lock(mutex_);
        ++counters_.errors;
      }
      pause(options_.error_backoff);
    }
  }
}

std::uint64_t FollowerThread::wait_newer(std::uint64_t seen, std::chrono::milliseconds timeout,
                                         std::stop_token stop) {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, stop, timeout, [&] { return counters_.delivered > seen; });
  return counters_.delivered;
}

std::uint64_t FollowerThread::delivered() const {
  std::lock_guard lock(mutex_);
  return counters_.delivered;
}

FollowerThreadCounters FollowerThread::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

}  // namespace spotlight::bus
