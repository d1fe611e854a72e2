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
// A version that fails verification (store::CorruptWeights, e.g. ChecksumMismatch) or that the
// policy cannot load is logged, counted (weights_corrupt) and never used; it is tried again only
// after retry_interval (a republished or repaired blob then loads). A load that fails halfway
// leaves the policy's weights unknown: loaded() becomes std::nullopt until the next good load.
//
// Errors: store::StoreUnavailable propagates (the caller backs off and retries; the loaded
// version is unchanged). Not thread-safe: one PolicyWeights per policy, used by one thread.

#include <chrono>
#include <cstdint>
#include <map>
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
  std::optional<std::int64_t> loaded() const { return loaded_; }
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

  store::WeightStore& store_;
  policy::Policy& policy_;
  ExplorerMetrics& metrics_;
  std::chrono::milliseconds retry_interval_;
  std::optional<std::int64_t> loaded_;
  std::string loaded_checksum_;
  std::map<std::int64_t, Clock::time_point> failed_until_;  // version -> next attempt
  std::set<std::int64_t> reported_;                         // rejected versions logged as errors
};

}  // namespace spotlight::explorer
