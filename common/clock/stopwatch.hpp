#pragma once
// Wall time of consecutive phases of one piece of work, by std::chrono::steady_clock:
//
//   Stopwatch watch;               // starts now
//   decide();  a = watch.lap();    // seconds since the start
//   enqueue(); b = watch.lap();    // seconds since the previous lap
//   total = watch.elapsed();       // seconds since the start
//
// Header-only; thread-compatible.

#include <chrono>

namespace spotlight::clock {

class Stopwatch {
 public:
  using Clock = std::chrono::steady_clock;

  Stopwatch() : start_(Clock::now()), lap_(start_) {}

  // Seconds since the previous lap() (the start for the first), and starts the next lap.
  double lap() {
    const Clock::time_point now = Clock::now();
    const double seconds = std::chrono::duration<double>(now - lap_).count();
    lap_ = now;
    return seconds;
  }

  // Seconds since construction.
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  Clock::time_point start_;
  Clock::time_point lap_;
};

}  // namespace spotlight::clock
