#pragma once
// Capped exponential back-off: initial, initial*factor, ... up to max, then max for ever, until
// reset(). A value type; not thread-safe.

#include <algorithm>
#include <chrono>

namespace spotlight::outage {

inline constexpr std::chrono::milliseconds kDefaultInitialBackoff{100};
inline constexpr std::chrono::milliseconds kDefaultMaxBackoff{2000};

struct BackoffOptions {
  std::chrono::milliseconds initial = kDefaultInitialBackoff;  // > 0
  std::chrono::milliseconds max = kDefaultMaxBackoff;          // >= initial
  double factor = 2.0;                                         // >= 1
};

class Backoff {
 public:
  explicit Backoff(BackoffOptions options = {}) : o_(options) {}

  // The next wait: initial on the first call after construction or reset(), then multiplied by
  // factor each call, never above max.
  std::chrono::milliseconds next() {
    current_ = current_.count() == 0
                   ? std::min(o_.initial, o_.max)
                   : std::min(o_.max, std::chrono::milliseconds(static_cast<long long>(
                                          static_cast<double>(current_.count()) * o_.factor)));
    return current_;
  }
  // True once next() has returned max.
  bool capped() const { return current_ >= o_.max; }
  void reset() { current_ = std::chrono::milliseconds(0); }
  const BackoffOptions& options() const { return o_; }

 private:
  BackoffOptions o_;
  std::chrono::milliseconds current_{0};
};

}  // namespace spotlight::outage
