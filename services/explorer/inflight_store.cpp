#include "services/explorer/inflight_store.hpp"

namespace spotlight::explorer {

void InflightStore::put(const wire::InflightCommit& commit) {
  state_.put_inflight(commit);
}

std::optional<wire::InflightCommit> InflightStore::get(const std::string& task_id) {
  return state_.inflight(task_id);
}

bool InflightStore::erase(const std::string& task_id) {
  return state_.erase_inflight(task_id);
}

}  // namespace spotlight::explorer
