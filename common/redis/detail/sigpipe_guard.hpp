#pragma once
// Internal to the Redis client (and its tests): keeps writes to a closed socket from killing the
// process with SIGPIPE, without touching the process-wide signal disposition.

#include <signal.h>

namespace spotlight::redis::detail {

// While alive, SIGPIPE is blocked on the calling thread; a SIGPIPE raised on this thread meanwhile
// is consumed before the mask is restored (libpq's technique). The write itself then fails with
// EPIPE. Not for nesting across threads: construct and destroy on the same thread.
class SigpipeGuard {
 public:
  SigpipeGuard();
  ~SigpipeGuard();
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t pipe_;
  sigset_t old_;
  bool was_pending_ = false;
};

}  // namespace spotlight::redis::detail
