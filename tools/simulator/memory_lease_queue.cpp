#include "tools/simulator/memory_lease_queue.hpp"

#include <algorithm>

namespace spotlight::simulator {
namespace {

// Owner of leases given back by fail() or release() until a reclaim() re-delivers them (as the
// Redis queue parks them), so their former holder no longer holds them.
constexpr const char* kParkingConsumer = "~released";

}  // namespace

MemoryLeaseQueue::MemoryLeaseQueue(queue::LeaseQueueOptions options,
                                   std::function<std::int64_t()> now_ms)
    : options_(std::move(options)), now_ms_(std::move(now_ms)) {
  options_.validate();
}

queue::EnqueueResult MemoryLeaseQueue::enqueue(std::string_view task_id, std::string_view payload) {
  if (known_.count(task_id)) return {"", false};
  known_.emplace(task_id);
  append(task_id, payload);
  ++totals_.enqueued_total;
  return {entries_.back().entry_id, true};
}

void MemoryLeaseQueue::append(std::string_view task_id, std::string_view payload) {
  Entry e;
  e.entry_id = std::to_string(++next_entry_) + "-0";
  e.task_id = std::string(task_id);
  e.payload = std::string(payload);
  entries_.push_back(std::move(e));
  if (first_waiting_ == entries_.end()) first_waiting_ = std::prev(entries_.end());
}

std::int64_t MemoryLeaseQueue::enqueue_many(std::span<const queue::Task> tasks) {
  std::int64_t added = 0;
  for (const auto& t : tasks)
    added += enqueue(t.task_id, t.payload).enqueued ? 1 : 0;
  return added;
}

queue::Lease MemoryLeaseQueue::to_lease(const Entry& e) const {
  return queue::Lease{e.entry_id, e.task_id, e.payload, e.consumer, e.deliveries};
}

std::vector<queue::Lease> MemoryLeaseQueue::lease(std::string_view consumer, int max_count,
                                                  std::chrono::milliseconds) {
  std::vector<queue::Lease> out;
  for (; first_waiting_ != entries_.end() && static_cast<int>(out.size()) < max_count;
       ++first_waiting_) {
    Entry& e = *first_waiting_;
    e.consumer = std::string(consumer);
    e.deliveries = 1;
    e.last_ms = now_ms_();
    out.push_back(to_lease(e));
  }
  totals_.leased_total += static_cast<std::int64_t>(out.size());
  return out;
}

MemoryLeaseQueue::Entries::iterator MemoryLeaseQueue::held(const queue::Lease& lease) {
  const auto it = std::find_if(entries_.begin(), first_waiting_, [&](const Entry& e) {
    return e.entry_id == lease.entry_id && e.consumer == lease.consumer;
  });
  return it == first_waiting_ ? entries_.end() : it;
}

queue::Completion MemoryLeaseQueue::complete(const queue::Lease& lease, std::string_view result) {
  queue::Completion c;
  c.recorded = results_.emplace(lease.task_id, std::string(result)).second;
  if (!c.recorded) ++totals_.duplicate_results_total;
  const auto it = std::find_if(entries_.begin(), first_waiting_,
                               [&](const Entry& e) { return e.entry_id == lease.entry_id; });
  if (it != first_waiting_) {
    entries_.erase(it);
    c.acked = true;
    ++totals_.acked_total;
  }
  return c;
}

queue::FailOutcome MemoryLeaseQueue::fail(const queue::Lease& lease, std::string_view error) {
  return fail_with(lease, error, options_.max_deliveries);
}

queue::FailOutcome MemoryLeaseQueue::reject(const queue::Lease& lease, std::string_view error) {
  return fail_with(lease, error, 0);
}

queue::FailOutcome MemoryLeaseQueue::fail_with(const queue::Lease& lease, std::string_view error,
                                               std::int64_t max_deliveries) {
  const auto it = held(lease);
  if (it == entries_.end()) return queue::FailOutcome::kNotHeld;
  errors_[it->task_id] = std::string(error);
  ++totals_.failed_total;
  if (it->deliveries >= max_deliveries) {
    dead_.push_back(queue::DeadLetter{it->entry_id, it->task_id, it->payload, std::string(error),
                                      it->consumer, it->deliveries});
    dead_ids_[it->task_id] = std::string(error);
    ++totals_.dead_lettered_total;
    entries_.erase(it);
    return queue::FailOutcome::kDeadLettered;
  }
  it->released = true;
  it->consumer = kParkingConsumer;
  return queue::FailOutcome::kRetry;
}

bool MemoryLeaseQueue::release(const queue::Lease& lease) {
  const auto it = held(lease);
  if (it == entries_.end()) return false;
  it->released = true;
  it->consumer = kParkingConsumer;
  --it->deliveries;  // this delivery does not count
  return true;
}

bool MemoryLeaseQueue::extend(const queue::Lease& lease) {
  const auto it = held(lease);
  if (it == entries_.end()) return false;
  it->last_ms = now_ms_();
  return true;
}

bool MemoryLeaseQueue::redeliver(Entries::iterator& e, std::string_view consumer,
                                 std::vector<queue::Lease>& out) {
  if (e->deliveries + 1 > options_.max_deliveries) {
    const auto error = errors_.find(e->task_id);
    dead_.push_back(
        queue::DeadLetter{e->entry_id, e->task_id, e->payload,
                          error != errors_.end() ? error->second : "delivery limit reached",
                          e->consumer, e->deliveries});
    dead_ids_[e->task_id] = dead_.back().error;
    ++totals_.dead_lettered_total;
    e = entries_.erase(e);
    return false;
  }
  e->consumer = std::string(consumer);
  ++e->deliveries;
  e->last_ms = now_ms_();
  e->released = false;
  out.push_back(to_lease(*e));
  ++totals_.reclaimed_total;
  ++totals_.leased_total;
  ++e;
  return true;
}

std::vector<queue::Lease> MemoryLeaseQueue::reclaim(std::string_view consumer,
                                                    std::chrono::milliseconds min_idle,
                                                    int max_count) {
  std::vector<queue::Lease> out;
  const std::int64_t now = now_ms_();
  for (auto e = entries_.begin();
       e != first_waiting_ && static_cast<int>(out.size()) < max_count;) {
    if (e->released || now - e->last_ms >= min_idle.count()) {
      redeliver(e, consumer, out);
    } else {
      ++e;
    }
  }
  return out;
}

std::vector<queue::Lease> MemoryLeaseQueue::reclaim_from(std::string_view dead_consumer,
                                                         std::string_view consumer, int max_count) {
  std::vector<queue::Lease> out;
  for (auto e = entries_.begin();
       e != first_waiting_ && static_cast<int>(out.size()) < max_count;) {
    if (e->consumer == dead_consumer) {
      redeliver(e, consumer, out);
    } else {
      ++e;
    }
  }
  return out;
}

std::optional<std::string> MemoryLeaseQueue::result(std::string_view task_id) {
  const auto it = results_.find(task_id);
  if (it == results_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::optional<queue::Abandoned>> MemoryLeaseQueue::abandoned(
    std::span<const std::string> task_ids) {
  std::vector<std::optional<queue::Abandoned>> out;
  out.reserve(task_ids.size());
  for (const auto& id : task_ids) {
    const auto it = dead_ids_.find(id);
    if (it == dead_ids_.end()) {
      out.emplace_back();
    } else {
      out.emplace_back(queue::Abandoned{queue::Abandonment::kDeadLettered, it->second});
    }
  }
  return out;
}

queue::QuarantineOutcome MemoryLeaseQueue::quarantine(std::string_view task_id,
                                                      std::string_view result,
                                                      std::string_view reason) {
  const auto it = results_.find(task_id);
  if (it == results_.end() || it->second != result) return {};
  quarantined_.push_back(queue::QuarantinedResult{std::to_string(quarantined_.size() + 1) + "-0",
                                                  std::string(task_id), std::string(reason),
                                                  it->second.substr(0, 4096)});
  results_.erase(it);
  ++totals_.quarantined_total;
  const bool queued = std::any_of(entries_.begin(), entries_.end(),
                                  [&](const Entry& e) { return e.task_id == task_id; });
  return {true, false, queued};  // payloads of acknowledged tasks are not kept here
}

std::vector<queue::QuarantinedResult> MemoryLeaseQueue::quarantined(int max_count) {
  const auto n = std::min<std::size_t>(quarantined_.size(), static_cast<std::size_t>(max_count));
  return {quarantined_.begin(), quarantined_.begin() + static_cast<std::ptrdiff_t>(n)};
}

std::int64_t MemoryLeaseQueue::result_count() {
  return static_cast<std::int64_t>(results_.size());
}

void MemoryLeaseQueue::for_each_result(
    const std::function<void(std::string_view, std::string_view)>& fn) {
  for (const auto& [id, r] : results_)
    fn(id, r);
}

std::optional<std::string> MemoryLeaseQueue::last_error(std::string_view task_id) {
  const auto it = errors_.find(task_id);
  if (it == errors_.end()) return std::nullopt;
  return it->second;
}

std::vector<queue::DeadLetter> MemoryLeaseQueue::dead_letters(int max_count) {
  const auto n = std::min<std::size_t>(dead_.size(), static_cast<std::size_t>(max_count));
  return {dead_.begin(), dead_.begin() + static_cast<std::ptrdiff_t>(n)};
}

queue::QueueStats MemoryLeaseQueue::stats() {
  queue::QueueStats s = totals_;
  const std::int64_t now = now_ms_();
  s.length = static_cast<std::int64_t>(entries_.size());
  s.leased = 0;
  std::int64_t oldest = 0;
  for (auto e = entries_.begin(); e != first_waiting_; ++e) {
    ++s.leased;
    oldest = std::max(oldest, now - e->last_ms);
  }
  s.waiting = s.length - s.leased;
  s.dead_letters = static_cast<std::int64_t>(dead_.size());
  s.results = static_cast<std::int64_t>(results_.size());
  s.oldest_lease_age = std::chrono::milliseconds(oldest);
  return s;
}

}  // namespace spotlight::simulator
