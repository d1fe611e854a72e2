#include "services/explorer/policy_weights.hpp"

#include <algorithm>
#include <exception>

#include "common/log/log.hpp"
#include "common/policy/policy.hpp"
#include "common/store/checksum.hpp"

namespace spotlight::explorer {

PolicyWeights::PolicyWeights(store::WeightStore& store, policy::Policy& policy,
                             ExplorerMetrics& metrics, std::chrono::milliseconds retry_interval)
    : store_(store), policy_(policy), metrics_(metrics), retry_interval_(retry_interval) {}

std::optional<std::int64_t> PolicyWeights::ensure(std::int64_t min_version) {
  if (loaded_ && *loaded_ >= min_version) return loaded_;
  const auto latest = store_.latest_version();
  if (!latest || *latest < min_version) return loaded_;
  auto published = store_.versions();
  if (std::find(published.begin(), published.end(), *latest) == published.end()) {
    published.push_back(*latest);
  }
  std::sort(published.rbegin(), published.rend());
  for (const std::int64_t version : published) {
    if (version < min_version || (loaded_ && version <= *loaded_)) break;
    if (try_load(version)) return loaded_;
  }
  return loaded_;
}

bool PolicyWeights::load_exact(std::int64_t version) {
  if (loaded_ == version) return true;
  return try_load(version);
}

bool PolicyWeights::offer(std::int64_t version, const std::string& bytes) {
  std::lock_guard pinned(mutex_);
  if (loaded_ && *loaded_ >= version) return false;
  if (!load_bytes(version, bytes, Clock::now())) return false;
  metrics_.weights_prefetched.inc();
  return true;
}

void PolicyWeights::set_loaded(std::optional<std::int64_t> version) {
  loaded_ = version;
  loaded_version_ = version.value_or(-1);
}

bool PolicyWeights::reject(std::int64_t version, const char* why, const std::string& what) {
  metrics_.weights_corrupt.inc();
  failed_until_[version] = Clock::now() + retry_interval_;
  if (reported_.insert(version).second) {
    log::error("weights version {} rejected ({}): {}", version, why, what);
  } else {
    log::debug("weights version {} rejected again ({}): {}", version, why, what);
  }
  return false;
}

bool PolicyWeights::try_load(std::int64_t version) {
  const auto now = Clock::now();
  if (const auto it = failed_until_.find(version); it != failed_until_.end()) {
    if (now < it->second) return false;
    failed_until_.erase(it);
  }
  std::optional<std::string> bytes;
  try {
    bytes = store_.fetch(version);
  } catch (const store::UntrustedWeights& e) {  // not signed with the run's key: not the trainer's
    metrics_.weights_untrusted.inc();
    return reject(version, "untrusted manifest", e.what());
  } catch (const store::CorruptWeights& e) {  // ChecksumMismatch among them
    return reject(version, "corrupt", e.what());
  }
  if (!bytes) return false;  // garbage-collected since it was listed
  return load_bytes(version, *bytes, now);
}

bool PolicyWeights::load_bytes(std::int64_t version, const std::string& bytes,
                               Clock::time_point started) {
  try {
    policy_.load_weights_bytes(bytes);
  } catch (const std::exception& e) {
    // The checksum matched, so the publisher wrote bytes this policy cannot hold (another
    // preset?). Some parameters may have been overwritten before the failure.
    set_loaded(std::nullopt);
    loaded_checksum_.clear();
    metrics_.weights_version.set(-1);
    return reject(version, "not loadable", e.what());
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  metrics_.weights_fetch_seconds.observe(seconds);
  metrics_.weights_loaded.inc();
  metrics_.weights_version.set(static_cast<double>(version));
  log::info("loaded weights version {} ({} bytes, {} s)", version, bytes.size(), seconds);
  // The checksum first: a thread that sees the new version through loaded() sees its checksum.
  loaded_checksum_ = store::to_hex(store::xxh64(bytes));
  set_loaded(version);
  return true;
}

}  // namespace spotlight::explorer
