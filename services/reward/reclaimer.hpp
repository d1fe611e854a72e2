#pragma once
// Reclaimer: frees what finished requests held (their received frames, many megabytes for a large
// request) and returns free memory to the system, on a thread of its own, so that neither the
// thread that reads and answers requests nor the scoring thread spends milliseconds unmapping
// a large frame while small requests wait behind it.
//
//   Reclaimer reclaimer;
//   reclaimer.release(std::move(holder), /*then_trim=*/true);   // returns at once
//
// Equivalent to:  on the reclaimer's thread, in order: holder.reset(); if then_trim:
// return_free_memory().
//
// Thread-safe. The destructor releases what is still queued, then joins its thread.

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

namespace spotlight::reward {

class Reclaimer {
 public:
  Reclaimer();
  ~Reclaimer();
  Reclaimer(const Reclaimer&) = delete;
  Reclaimer& operator=(const Reclaimer&) = delete;

  void release(std::shared_ptr<const void> holder, bool then_trim = false);

 private:
  void run(std::stop_token stop);

  std::mutex mutex_;
  std::condition_variable_any queued_;
  std::deque<std::pair<std::shared_ptr<const void>, bool>> pending_;
  std::jthread thread_;  // last: started after everything it uses exists
};

}  // namespace spotlight::reward
