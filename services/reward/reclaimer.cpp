#include "services/reward/reclaimer.hpp"

#include "services/reward/memory_trim.hpp"

namespace spotlight::reward {

Reclaimer::Reclaimer() : thread_([this](std::stop_token stop) { run(stop); }) {}

Reclaimer::~Reclaimer() {
  thread_.request_stop();
  thread_.join();
  pending_.clear();  // anything released after the thread's last look
}

void Reclaimer::release(std::shared_ptr<const void> holder, bool then_trim) {
  {
    std::lock_guard lock(mutex_);
    pending_.emplace_back(std::move(holder), then_trim);
  }
  queued_.notify_one();
}

void Reclaimer::run(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  for (;;) {
    queued_.wait(lock, stop, [&] { return !pending_.empty(); });
    if (pending_.empty()) return;  // stopped with nothing left
    auto [holder, trim] = std::move(pending_.front());
    pending_.pop_front();
    lock.unlock();
    holder.reset();
    if (trim) return_free_memory();
    lock.lock();
  }
}

}  // namespace spotlight::reward
