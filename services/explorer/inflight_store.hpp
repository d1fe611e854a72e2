#pragma once
// In-flight commits (issue #4): the sampler state of a seed task whose explorer got a preemption
// notice, kept durably so the next holder of the task resumes it at its step instead of from
// noise. One commit per task id in the run's key-value store under "inflight:<task id>".
//
// Protocol (explorer side):
//   on a notice, per task of the chunk being sampled:  put(commit); then queue.release(lease)
//   on lease:                                          get(task id) -> resume if usable
//   after queue.complete(lease, result):               erase(task id)
// put() returns after the store acknowledged the write (durable as Redis is: AOF). A commit left
// behind (erase failed, holder killed) is harmless: it is only read for a task that is leased,
// and a completed task is never leased again.
//
// Errors: store::StoreUnavailable propagates; get() throws wire::WireError for a commit that
// does not decode. Thread-compatible, like the KeyValueStore it uses.

#include <optional>
#include <string>

#include "common/store/key_value_store.hpp"
#include "common/wire/messages.hpp"

namespace spotlight::explorer {

class InflightStore {
 public:
  // `kv` is the run's store (RunKeys::prefix) and must outlive this object.
  explicit InflightStore(store::KeyValueStore& kv) : kv_(kv) {}

  static std::string key(const std::string& task_id) { return "inflight:" + task_id; }

  void put(const wire::InflightCommit& commit);
  std::optional<wire::InflightCommit> get(const std::string& task_id);
  // True if a commit existed.
  bool erase(const std::string& task_id);

 private:
  store::KeyValueStore& kv_;
};

}  // namespace spotlight::explorer
