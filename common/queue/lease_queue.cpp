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

}  // namespace spotlight::queue
