#pragma once
// PolicyWeights: keeps a policy loaded with a published weights version, as new as a task needs.
//
//   ensure(min_version):
//     if loaded() >= min_version: return loaded()
//     for v in published versions, newest first, while v >= min_version (and v > loaded()):
//       skip v if it failed within retry_interval
//       bytes = store.fetch(v)            // verified against v's manifest by the store
//       policy.load_weights_bytes(bytes); return v
//     return loaded()                     // may be < min_version: not published (yet)
//
// A version that fails verification (store::CorruptWeights, e.g. ChecksumMismatch, or
// UntrustedWeights: its manifest is not signed with the run's key, also counted
// weights_untrusted) or that the policy cannot load is logged, counted (weights_corrupt) and
// never used; it is tried again only
// after retry_interval (a republished or repaired blob then loads). A load that fails halfway
// leaves the policy's weights unknown: loaded() becomes std::nullopt until the next good load.
//
// Prefetch (weights_prefetch.hpp): another thread may offer(version, bytes) it fetched and
// verified on a weights notice; the version is loaded at once unless the owner has pinned the
// loaded version (a batch in progress), in which case the offer waits for the pin's release:
//
//   offer(v, bytes):  lock the pin; if loaded() < v (or none): load bytes, counted as prefetched
//
// Errors: store::StoreUnavailable propagates (the caller backs off and retries; the loaded
// version is unchanged). Thread-safety: ensure(), load_exact() and loaded_checksum() belong to
// one owner thread, which calls them while it holds pin(); offer() and loaded() may be called
// from any thread.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "common/store/weight_store.hpp"
#include "services/explorer/explorer_metrics.hpp"
#include "services/explorer/explorer_options.hpp"

namespace spotlight::policy {
class Policy;  // common/policy/policy.hpp
}  // namespace spotlight::policy

namespace spotlight::explorer {

class PolicyWeights {
 public:
  // All three must outlive this object.
  PolicyWeights(store::WeightStore& store, policy::Policy& policy, ExplorerMetrics& metrics,
                std::chrono::milliseconds retry_interval = kDefaultWeightsRetryInterval);

  // The version the policy holds; std::nullopt before the first load (or after a failed one).
  std::optional<std::int64_t> loaded() const {
    const std::int64_t v = loaded_version_.load();
    return v < 0 ? std::nullopt : std::optional<std::int64_t>(v);
  }
  // Keeps the loaded version (and the policy's weights) unchanged by offer() until released.
  // pin() waits for a load in progress; try_pin() waits at most `timeout` (owns_lock() says
  // whether it got it), so the owner can keep its leases alive meanwhile.
  std::unique_lock<std::timed_mutex> pin() { return std::unique_lock(mutex_); }
  std::unique_lock<std::timed_mutex> try_pin(std::chrono::milliseconds timeout) {
    return std::unique_lock(mutex_, timeout);
  }
  // Loads `bytes` (already verified against `version`'s manifest by the caller) if `version` is
  // newer than the loaded one; waits while the version is pinned. True when it loaded them.
  bool offer(std::int64_t version, const std::string& bytes);
  // XXH64 (hex) of the bytes of the loaded version: what the weight store's manifest of that
  // version says, as the trainer checks it for kept trajectories. Empty when nothing is loaded.
  const std::string& loaded_checksum() const { return loaded_checksum_; }

  // See the top of this file. Throws store::StoreUnavailable.
  std::optional<std::int64_t> ensure(std::int64_t min_version);

  // Loads exactly `version` (the version in-flight commits were made with, to resume them)
  // unless it is loaded already. True when the policy holds it afterwards; false when it is not
  // published (any more) or is rejected as in ensure(). Throws store::StoreUnavailable.
  bool load_exact(std::int64_t version);

 private:
  using Clock = std::chrono::steady_clock;
  bool try_load(std::int64_t version);
  // Loads verified `bytes` as `version`; false (counted, retried after retry_interval) when the
  // policy cannot hold them. Called with mutex_ held or by the pinning owner.
  bool load_bytes(std::int64_t version, const std::string& bytes, Clock::time_point started);
  bool reject(std::int64_t version, const char* why, const std::string& what);
  void set_loaded(std::optional<std::int64_t> version);

  store::WeightStore& store_;
  policy::Policy& policy_;
  ExplorerMetrics& metrics_;
  std::chrono::milliseconds retry_interval_;
  std::timed_mutex mutex_;  // the pin
  std::optional<std::int64_t> loaded_;
  std::atomic<std::int64_t> loaded_version_{-1};  // loaded_, readable from any thread
  std::string loaded_checksum_;
  std::map<std::int64_t, Clock::time_point> failed_until_;  // version -> next attempt
  std::set<std::int64_t> reported_;                         // rejected versions logged as errors
};

}  // namespace spotlight::explorer
