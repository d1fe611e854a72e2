#pragma once
// wait_for(condition, timeout): polls `condition` with a growing back-off (1 ms .. 20 ms) until it
// returns true or `timeout` passes; returns the last value. Use it instead of fixed sleeps when a
// test waits for something another thread/process does (a lease to expire, a key to appear).

#include <algorithm>
#include <chrono>
#include <thread>

namespace spotlight::testing {

template <typename Condition>
bool wait_for(Condition&& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto delay = std::chrono::milliseconds(1);
  for (;;) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return condition();
    std::this_thread::sleep_for(delay);
    delay = std::min(delay * 2, std::chrono::milliseconds(20));
  }
}

}  // namespace spotlight::testing
