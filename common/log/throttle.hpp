#pragma once
// Throttle: at most one log line per interval for a condition that may repeat for every item (a
// misbehaving dependency), without losing count of the lines it held back.
//
//   log::Throttle faults(std::chrono::seconds(10));
//   if (const auto held_back = faults.admit()) {
//     log::error("reward fault: {} ({} more since the previous line)", what, *held_back);
//   }
//
// admit() == first call, or `interval` passed since the last line let through
//              ? (n = lines held back since then, reset to 0, return n) : (count one, nullopt)
//
// Thread-compatible.

#include <chrono>
#include <cstdint>
#include <optional>

namespace spotlight::log {

class Throttle {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Throttle(Clock::duration interval) : interval_(interval) {}

  std::optional<std::uint64_t> admit(Clock::time_point now = Clock::now()) {
    if (said_ && now - last_ < interval_) {
      ++held_back_;
      return std::nullopt;
    }
    said_ = true;
    last_ = now;
    const std::uint64_t n = held_back_;
    held_back_ = 0;
    return n;
  }

 private:
  Clock::duration interval_;
  Clock::time_point last_{};
  bool said_ = false;
  std::uint64_t held_back_ = 0;
};

}  // namespace spotlight::log
