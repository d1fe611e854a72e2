#pragma once
// Kept SDE trajectories of explored seeds (wire::SeedTrajectory bytes, ~100 KiB each for the
// embedded presets), keyed by seed-task id, each expiring `ttl` after it was written: explorers
// put() the trajectory of a task before they record its result; the trainer get()s the ones it
// selected and erase()s an iteration's trajectories once it no longer needs them. The expiry
// bounds what is left behind (seeds never selected after a deadline, a trainer that died).
//
// Errors: StoreUnavailable when the backing store cannot be reached (back off and retry),
// StoreError otherwise (common/store/errors.hpp). Absence is std::nullopt.
// Thread-compatible (one connection): one store object per thread.

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/store/errors.hpp"

namespace spotlight::store {

inline constexpr std::chrono::milliseconds kDefaultTrajectoryTtl{600000};

struct TrajectoryStoreOptions {
  std::string key_prefix;  // RunKeys::trajectories; a trajectory lives at "<key_prefix>:<task id>"
  std::chrono::milliseconds ttl = kDefaultTrajectoryTtl;  // > 0

  // Throws InvalidStoreOptions naming the first bad field.
  void validate() const;
};

class TrajectoryStore {
 public:
  virtual ~TrajectoryStore() = default;

  // Writes (or overwrites) the trajectory of `task_id`; it expires after the ttl. Returns after
  // the store acknowledged the write.
  virtual void put(std::string_view task_id, std::string_view bytes) = 0;
  virtual std::optional<std::string> get(std::string_view task_id) = 0;
  // Deletes the trajectories of `task_ids` (absent ones are skipped); returns how many existed.
  virtual std::int64_t erase(std::span<const std::string> task_ids) = 0;
};

}  // namespace spotlight::store
