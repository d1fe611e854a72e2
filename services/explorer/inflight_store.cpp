#include "services/explorer/inflight_store.hpp"

namespace spotlight::explorer {

void InflightStore::put(const wire::InflightCommit& commit) {
  kv_.put(key(commit.task_id), commit.encode());
}

std::optional<wire::InflightCommit> InflightStore::get(const std::string& task_id) {
  const auto bytes = kv_.get(key(task_id));
  if (!bytes) return std::nullopt;
  return wire::InflightCommit::decode(*bytes);
}

bool InflightStore::erase(const std::string& task_id) {
  return kv_.erase(key(task_id));
}

}  // namespace spotlight::explorer
