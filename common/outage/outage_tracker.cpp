#include "common/outage/outage_tracker.hpp"

#include <iomanip>
#include <sstream>

#include "common/log/log.hpp"

namespace spotlight::outage {
namespace {

std::string seconds_text(std::chrono::duration<double> d) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << d.count();
  return out.str();
}

}  // namespace

OutageTracker::OutageTracker(std::string dependency, metrics::Registry* registry,
                             BackoffOptions backoff)
    : dependency_(std::move(dependency)), backoff_(backoff) {
  if (registry == nullptr) return;
  const std::string prefix = "spotlight_" + registry->service() + "_" + dependency_;
  up_ = registry->gauge(prefix + "_up", "1 while " + dependency_ + " answers, 0 during an outage.");
  outages_total_ = registry->counter(prefix + "_outages_total",
                                     "Outages of " + dependency_ + " (first failure to recovery).");
  outage_seconds_total_ = registry->counter(
      prefix + "_outage_seconds_total", "Time spent in finished outages of " + dependency_ + ".");
  outage_seconds_ =
      registry->gauge(prefix + "_outage_seconds",
                      "Length of the current outage of " + dependency_ + " so far (0 when up).");
  up_.set(1);
}

std::chrono::milliseconds OutageTracker::failed(const std::exception& error) {
  std::lock_guard lock(mutex_);
  const auto now = Clock::now();
  ++attempts_;
  const auto wait = backoff_.next();
  if (state_ == State::kUp) {
    state_ = State::kLost;
    since_ = now;
    ++outages_;
    up_.set(0);
    outages_total_.inc();
    log::warn("{} lost: {}; retrying, back-off from {} ms up to {} ms", dependency_, error.what(),
              backoff_.options().initial.count(), backoff_.options().max.count());
  } else if (state_ == State::kLost && backoff_.capped()) {
    state_ = State::kRetrying;
    log::warn("{} still unavailable after {} s ({} attempts); retrying every {} s: {}", dependency_,
              seconds_text(now - since_), attempts_, seconds_text(backoff_.options().max),
              error.what());
  }
  outage_seconds_.set(std::chrono::duration<double>(now - since_).count());
  return wait;
}

void OutageTracker::succeeded() {
  std::lock_guard lock(mutex_);
  if (state_ == State::kUp) return;
  const std::chrono::duration<double> lasted = Clock::now() - since_;
  log::info("{} restored after {} s ({} failed attempts)", dependency_, seconds_text(lasted),
            attempts_);
  state_ = State::kUp;
  attempts_ = 0;
  backoff_.reset();
  up_.set(1);
  outage_seconds_.set(0);
  outage_seconds_total_.inc(lasted.count());
}

bool OutageTracker::down() const {
  std::lock_guard lock(mutex_);
  return state_ != State::kUp;
}

OutageTracker::Clock::duration OutageTracker::down_for() const {
  std::lock_guard lock(mutex_);
  return state_ == State::kUp ? Clock::duration::zero() : Clock::now() - since_;
}

std::uint64_t OutageTracker::outages() const {
  std::lock_guard lock(mutex_);
  return outages_;
}

}  // namespace spotlight::outage
