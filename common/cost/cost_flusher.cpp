#include "common/cost/cost_flusher.hpp"

#include <exception>

#include "common/log/log.hpp"

namespace spotlight::cost {

CostFlusher::CostFlusher(CostReporter& reporter, std::function<void()> update,
                         std::chrono::milliseconds period)
    : reporter_(reporter), update_(std::move(update)), period_(period) {
  thread_ = std::jthread([this](std::stop_token stop) {
    while (!stop.stop_requested()) {
      {
        std::unique_lock lock(mutex_);
        wake_.wait_for(lock, stop, period_, [] { return false; });
      }
      flush_once();
    }
  });
}

CostFlusher::~CostFlusher() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

void CostFlusher::flush_once() {
  // One line when flushing starts failing and one when it works again, not one per period.
  try {
    if (update_) update_();
    reporter_.flush();
    if (failing_) log::info("cost ledger flushes again");
    failing_ = false;
  } catch (const std::exception& e) {
    if (!failing_) log::warn("cost ledger flush failed (retrying every period): {}", e.what());
    failing_ = true;
  }
}

}  // namespace spotlight::cost
