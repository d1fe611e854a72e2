#pragma once
// In-flight commits (issue #4): the sampler state of a seed task whose explorer got a preemption
// notice, kept durably so the next holder of the task resumes it at its step instead of from
// noise. One commit per task id in the run's state (RunKeys::inflight(task id)).
//
// Protocol (explorer side):
//   on a notice, per task of the chunk being sampled:  put(commit); then queue.release(lease)
//   on lease:                                          get(task id) -> resume if usable
//   after queue.complete(lease, result):               erase(task id)
// put() returns after the store acknowledged the write (durable as Redis is: AOF). A commit left
// behind (erase failed, holder killed) is harmless: it is only read for a task that is leased,
// and a completed task is never leased again.
//
// Errors: store::StoreUnavailable propagates; get() throws run::MalformedRunState for a commit
// that does not decode. Thread-compatible, like the RunState it uses.

#include <optional>
#include <string>

#include "common/run/run_state.hpp"
#include "common/wire/messages.hpp"

namespace spotlight::explorer {

class InflightStore {
 public:
  // `state` is the run's state and must outlive this object.
  explicit InflightStore(run::RunState& state) : state_(state) {}

  void put(const wire::InflightCommit& commit);
  std::optional<wire::InflightCommit> get(const std::string& task_id);
  // True if a commit existed.
  bool erase(const std::string& task_id);

 private:
  run::RunState& state_;
};

}  // namespace spotlight::explorer
