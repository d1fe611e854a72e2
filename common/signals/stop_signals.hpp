#pragma once
// StopSignals: SIGTERM (the preemption/shutdown notice) and SIGINT as an event a thread waits
// for, by the self-pipe trick. The handlers only write the signal number to a pipe (one
// async-signal-safe write(), errno preserved); all work happens in wait()'s caller.
//
//   StopSignals signals;                                  // early in main, before threads
//   std::jthread serve([&](std::stop_token st) { ... done.request_stop(); });
//   if (auto sig = signals.wait(done.get_token())) log::info("signal {}", *sig);
//
// Contract: one instance per process at a time; the destructor restores the previous handlers.
// A signal that arrives before wait() is not lost. wait() is for one thread at a time.

#include <optional>
#include <stop_token>
#include <string>

namespace spotlight::signals {

class StopSignals {
 public:
  // Installs the handlers. Throws std::logic_error when another instance exists,
  // std::system_error when the pipe or sigaction() fails.
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Blocks until SIGTERM or SIGINT arrives (returns its number) or `stop` is requested (returns
  // std::nullopt; a signal already pending is returned first).
  std::optional<int> wait(std::stop_token stop = {});
};

// "SIGTERM", "SIGINT", else "signal <n>", for logs.
std::string signal_name(int signal_number);

}  // namespace spotlight::signals
