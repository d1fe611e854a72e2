#include "services/reward/fair_queue.hpp"

#include <algorithm>
#include <stdexcept>

namespace spotlight::reward {

void FairQueueOptions::validate() const {
  const auto require = [](bool ok, const char* field, const char* why) {
    if (!ok) throw std::invalid_argument(std::string("FairQueueOptions.") + field + ": " + why);
  };
  require(client_units >= 1, "client_units", "must be >= 1");
  require(max_batch_units >= client_units, "max_batch_units", "must be >= client_units");
  require(max_batch_slices >= 1, "max_batch_slices", "must be >= 1");
  require(max_client_bytes <= max_bytes, "max_client_bytes", "must be <= max_bytes");
}

FairQueue::FairQueue(FairQueueOptions options) : options_(options) {
  options_.validate();
}

bool FairQueue::client_pending(const Client& c) const {
  return std::any_of(c.jobs.begin(), c.jobs.end(), [](const auto& j) { return pending(*j); });
}

Admission FairQueue::admit(std::shared_ptr<FairJob> job) {
  if (job->bytes > options_.max_bytes - std::min(bytes_, options_.max_bytes)) {
    return Admission::kOverBudget;
  }
  auto found = clients_.find(job->client);
  const std::size_t client_bytes = found == clients_.end() ? 0 : found->second.bytes;
  if (job->bytes > options_.max_client_bytes - std::min(client_bytes, options_.max_client_bytes)) {
    return Admission::kClientOverBudget;
  }
  if (found == clients_.end()) {
    found = clients_.emplace(job->client, Client{}).first;
    found->second.position = order_.insert(order_.end(), job->client);
  }
  Client& c = found->second;
  c.bytes += job->bytes;
  bytes_ += job->bytes;
  ++jobs_;
  c.jobs.push_back(std::move(job));
  return Admission::kAdmitted;
}

std::vector<FairQueue::Slice> FairQueue::take() {
  std::vector<Slice> out;
  std::vector<std::list<std::string>::iterator> active;
  for (auto it = order_.begin(); it != order_.end(); ++it) {
    if (client_pending(clients_.at(*it))) active.push_back(it);
  }
  if (active.empty()) return out;
  const bool alone = active.size() == 1;
  if (!alone) {
    // Every light client (all it has pending fits in one share), and one heavy client's share:
    // the first heavy client in round-robin order, taken first so that light clients cannot
    // crowd it out. The other heavy clients keep their places for the next batches.
    std::vector<std::list<std::string>::iterator> chosen;
    bool heavy_chosen = false;
    for (const auto& it : active) {
      if (pending_units(clients_.at(*it)) <= options_.client_units) continue;
      if (!heavy_chosen) chosen.push_back(it);
      heavy_chosen = true;
    }
    for (const auto& it : active) {
      if (pending_units(clients_.at(*it)) <= options_.client_units) chosen.push_back(it);
    }
    active = std::move(chosen);
  }
  std::size_t room = options_.max_batch_units;
  std::size_t visited = 0;
  for (const auto& it : active) {
    if (room == 0 || out.size() >= options_.max_batch_slices) break;
    ++visited;
    std::size_t share = alone ? room : std::min(room, options_.client_units);
    for (const auto& job : clients_.at(*it).jobs) {
      if (share == 0 || out.size() >= options_.max_batch_slices) break;
      if (!pending(*job)) continue;
      const std::size_t n = std::min(share, job->units - job->scheduled);
      out.push_back(Slice{job, job->scheduled, job->scheduled + n});
      job->scheduled += n;
      share -= n;
      room -= n;
    }
  }
  // Round robin: the clients served go to the back, in the order they were served; those the
  // batch had no room for stay in front for the next one.
  for (std::size_t i = 0; i < visited; ++i)
    order_.splice(order_.end(), order_, active[i]);
  return out;
}

void FairQueue::finish(const std::shared_ptr<FairJob>& job) {
  const auto found = clients_.find(job->client);
  if (found == clients_.end()) return;
  Client& c = found->second;
  const auto it = std::find(c.jobs.begin(), c.jobs.end(), job);
  if (it == c.jobs.end()) return;
  c.bytes -= job->bytes;
  bytes_ -= job->bytes;
  --jobs_;
  c.jobs.erase(it);
  if (c.jobs.empty()) {
    order_.erase(c.position);
    clients_.erase(found);
  }
}

void FairQueue::cancel(const std::shared_ptr<FairJob>& job) {
  job->units = job->scheduled;
}

std::size_t FairQueue::pending_units(const Client& c) {
  std::size_t n = 0;
  for (const auto& j : c.jobs)
    n += j->units - j->scheduled;
  return n;
}

bool FairQueue::has_work() const {
  for (const auto& [name, c] : clients_) {
    if (client_pending(c)) return true;
  }
  return false;
}

std::size_t FairQueue::unscheduled_units() const {
  std::size_t n = 0;
  for (const auto& [name, c] : clients_) {
    for (const auto& j : c.jobs)
      n += j->units - j->scheduled;
  }
  return n;
}

}  // namespace spotlight::reward
