#pragma once
// A stop request that a loop can wait on: set once by another thread or by a signal handler,
// never cleared.
//
//   StopFlag stop;
//   StopFlag::stop_on_signals(stop);              // SIGTERM and SIGINT request the stop
//   while (!stop.wait_for(period)) { ... }       // wakes at once when the stop is requested
//
// Contract: request() is thread-safe and async-signal-safe; wait_for() returns true as soon as a
// stop was requested (before or during the wait), false when the timeout passed without one.
// Self-pipe underneath (no polling of the flag).

#include <atomic>
#include <chrono>
#include <optional>

namespace spotlight::planner {

class StopFlag {
 public:
  StopFlag();  // throws std::system_error if no pipe can be created
  ~StopFlag();
  StopFlag(const StopFlag&) = delete;
  StopFlag& operator=(const StopFlag&) = delete;

  void request();
  bool requested() const { return requested_.load(); }
  bool wait_for(std::chrono::milliseconds timeout) const;
  // The signal that requested the stop, if one did.
  std::optional<int> signal() const;

  // Routes SIGTERM and SIGINT to `flag` until it is destroyed (then they terminate the process
  // again). One flag per process: a later call replaces the earlier flag.
  static void stop_on_signals(StopFlag& flag);

 private:
  static void on_signal(int signo);
  std::atomic<bool> requested_{false};
  std::atomic<int> signal_{0};
  int read_fd_ = -1;
  int write_fd_ = -1;
};

}  // namespace spotlight::planner
