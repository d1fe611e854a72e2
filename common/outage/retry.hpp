#pragma once
// A call to a dependency retried through its outages:
//
//   retry(tracker, options, fn) ==
//     loop:
//       try: r = fn(); tracker.succeeded(); return r
//       catch e with classify(e) == kUnavailable:
//         wait = tracker.failed(e)
//         if options.limit > 0 and tracker.down_for() >= options.limit: throw OutageLimitExceeded
//         wait `wait`, or until options.stop is requested: then throw RetryStopped
//       (every other error propagates unchanged: access denied, bad data, bugs)
//
// fn must be safe to run again after a failure (every lease-queue and store operation is).

#include <chrono>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <type_traits>
#include <utility>

#include "common/outage/failure.hpp"
#include "common/outage/outage_tracker.hpp"

namespace spotlight::outage {

// The dependency stayed unavailable for longer than RetryOptions::limit.
class OutageLimitExceeded : public std::runtime_error {
 public:
  OutageLimitExceeded(const std::string& dependency, std::chrono::duration<double> lasted,
                      std::chrono::milliseconds limit, const std::string& last_error);
  std::chrono::duration<double> lasted() const { return lasted_; }

 private:
  std::chrono::duration<double> lasted_;
};

// A stop was requested while waiting to retry.
class RetryStopped : public std::runtime_error {
 public:
  explicit RetryStopped(const std::string& dependency)
      : std::runtime_error("stopped while waiting for " + dependency) {}
};

struct RetryOptions {
  std::chrono::milliseconds limit{0};  // longest outage to ride through; 0: no limit
  std::stop_token stop;                // ends a wait early (RetryStopped)
};

// Waits `duration` or until `stop` is requested; true when stopped. No polling.
bool wait_or_stop(const std::stop_token& stop, std::chrono::milliseconds duration);

template <class Fn>
auto retry(OutageTracker& tracker, const RetryOptions& options, Fn&& fn) -> decltype(fn()) {
  for (;;) {
    std::chrono::milliseconds wait{0};
    try {
      if constexpr (std::is_void_v<decltype(fn())>) {
        fn();
        tracker.succeeded();
        return;
      } else {
        auto result = fn();
        tracker.succeeded();
        return result;
      }
    } catch (const std::exception& e) {
      if (classify(e) != Failure::kUnavailable) throw;
      wait = tracker.failed(e);
      if (options.limit.count() > 0 && tracker.down_for() >= options.limit) {
        throw OutageLimitExceeded(tracker.dependency(), tracker.down_for(), options.limit,
                                  e.what());
      }
    }
    if (wait_or_stop(options.stop, wait)) throw RetryStopped(tracker.dependency());
  }
}

// The same, bound to one tracker and options: `Retrier r(tracker, options); r([&] { ... });`.
class Retrier {
 public:
  Retrier(OutageTracker& tracker, RetryOptions options)
      : tracker_(tracker), options_(std::move(options)) {}
  template <class Fn>
  auto operator()(Fn&& fn) const -> decltype(fn()) {
    return retry(tracker_, options_, std::forward<Fn>(fn));
  }
  OutageTracker& tracker() const { return tracker_; }

 private:
  OutageTracker& tracker_;
  RetryOptions options_;
};

// fn() through `retry` when there is one, else once: for code whose retrier is optional.
template <class Fn>
auto call_with(const Retrier* retry, Fn&& fn) -> decltype(fn()) {
  if (retry != nullptr) return (*retry)(std::forward<Fn>(fn));
  return fn();
}

}  // namespace spotlight::outage
