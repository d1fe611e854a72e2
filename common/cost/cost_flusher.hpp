#pragma once
// Flushes a CostReporter from its own thread every `period` (and once more when stopped), for
// services whose main loop should not carry it. Before each flush it calls `update` (e.g. to
// report the busy seconds measured so far to the meter). A failed flush (Redis away) is retried
// at the next period and never stops the thread; it is logged once when flushing starts failing
// and once when it works again.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "common/cost/cost_reporter.hpp"

namespace spotlight::cost {

inline constexpr std::chrono::milliseconds kDefaultFlushPeriod{1000};

class CostFlusher {
 public:
  // The reporter (and what `update` touches) must outlive the flusher.
  CostFlusher(CostReporter& reporter, std::function<void()> update,
              std::chrono::milliseconds period = kDefaultFlushPeriod);
  // Stops the thread after a last update and flush.
  ~CostFlusher();
  CostFlusher(const CostFlusher&) = delete;
  CostFlusher& operator=(const CostFlusher&) = delete;

 private:
  void flush_once();

  CostReporter& reporter_;
  std::function<void()> update_;
  std::chrono::milliseconds period_;
  bool failing_ = false;  // the flusher thread's own
  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::jthread thread_;
};

}  // namespace spotlight::cost
