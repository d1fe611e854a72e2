#pragma once
// Wall-clock time as exchanged between processes: integer Unix milliseconds from system_clock
// (heartbeats, deadline_unix_ms, published_unix_ms, launcher and chaos logs). Within a process,
// measure durations and timeouts with std::chrono::steady_clock instead: the wall clock may jump.
// Header-only; thread-safe.

#include <chrono>
#include <cstdint>

namespace spotlight::clock {

// Milliseconds since the Unix epoch, now, by this host's wall clock.
inline std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace spotlight::clock
