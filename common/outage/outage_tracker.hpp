#pragma once
// One dependency (Redis) as one service sees it. Every call site reports the outcome of its calls;
// the tracker logs one line per change of state, chooses the back-off and keeps the metrics:
//
//   up       --failed()-->                     lost      WARN "redis lost: <error>; retrying ..."
//   lost     --failed(), back-off at its cap--> retrying WARN "redis still unavailable after
//                                                             <s> s (<n> attempts); retrying
//                                                             every <cap> s"
//   lost|retrying --succeeded()-->              up        INFO "redis restored after <s> s (<n>
//                                                             failed attempts)"
//
// The outage's length runs from the first failed call to the first successful one. Metrics (when
// a registry is given), <dep> = the dependency's name:
//   spotlight_<service>_<dep>_up                     gauge, 1 while up, 0 during an outage
//   spotlight_<service>_<dep>_outages_total          outages begun
//   spotlight_<service>_<dep>_outage_seconds_total   time spent in finished outages
//   spotlight_<service>_<dep>_outage_seconds         gauge: length of the current outage so far
//                                                    (updated at each failed call; 0 when up)
// Thread-safe.

#include <chrono>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>

#include "common/metrics/metrics.hpp"
#include "common/outage/backoff.hpp"

namespace spotlight::outage {

class OutageTracker {
 public:
  using Clock = std::chrono::steady_clock;

  // `dependency`: [a-z][a-z0-9]* (a metric-name segment), e.g. "redis". `registry` may be null.
  OutageTracker(std::string dependency, metrics::Registry* registry, BackoffOptions backoff = {});

  // A call failed because the dependency is unavailable. Returns how long to wait before the next
  // attempt (capped exponential back-off over the outage).
  std::chrono::milliseconds failed(const std::exception& error);
  // A call succeeded; ends the outage, if any.
  void succeeded();

  bool down() const;
  // Length of the current outage; zero when up.
  Clock::duration down_for() const;
  std::uint64_t outages() const;
  const std::string& dependency() const { return dependency_; }

 private:
  enum class State { kUp, kLost, kRetrying };

  std::string dependency_;
  mutable std::mutex mutex_;
  State state_ = State::kUp;
  Backoff backoff_;
  Clock::time_point since_{};
  std::uint64_t attempts_ = 0;  // failed calls in the current outage
  std::uint64_t outages_ = 0;
  metrics::Gauge up_;
  metrics::Counter outages_total_;
  metrics::Counter outage_seconds_total_;
  metrics::Gauge outage_seconds_;
};

}  // namespace spotlight::outage
