#include "common/queue/lease_queue.hpp"

namespace spotlight::queue {

std::vector<std::optional<std::string>> LeaseQueue::results(std::span<const std::string> task_ids) {
  std::vector<std::optional<std::string>> out;
  out.reserve(task_ids.size());
  for (const auto& id : task_ids)
    out.push_back(result(id));
  return out;
}

bool LeaseQueue::wait_result_notice(std::chrono::milliseconds /*timeout*/) {
  return false;
}

std::vector<std::optional<Abandoned>> LeaseQueue::abandoned(std::span<const std::string> task_ids) {
  return std::vector<std::optional<Abandoned>>(task_ids.size());
}

bool LeaseQueue::purged(std::string_view task_id) {
  const std::string id(task_id);
  const auto how = abandoned(std::span<const std::string>(&id, 1));
  return !how.empty() && how.front() && how.front()->how == Abandonment::kPurged;
}

}  // namespace spotlight::queue
