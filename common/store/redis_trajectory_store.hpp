#pragma once
// TrajectoryStore on Redis strings "<key_prefix>:<task id>" written with SET PX (the ttl).
// Redis errors are translated: RedisUnavailable -> StoreUnavailable, RedisAuthError ->
// StoreAccessDenied, others -> StoreError (store::throw_store_error).
// Connects on first use. Thread-compatible (one connection): one object per thread.

#include "common/redis/client.hpp"
#include "common/store/trajectory_store.hpp"

namespace spotlight::store {

class RedisTrajectoryStore final : public TrajectoryStore {
 public:
  // Throws InvalidStoreOptions for invalid options.
  RedisTrajectoryStore(redis::RedisOptions redis, TrajectoryStoreOptions options);

  void put(std::string_view task_id, std::string_view bytes) override;
  std::optional<std::string> get(std::string_view task_id) override;
  std::int64_t erase(std::span<const std::string> task_ids) override;

  // The Redis key of a task's trajectory.
  std::string redis_key(std::string_view task_id) const;

 private:
  template <typename Fn>
  auto call(std::string_view what, Fn&& fn) -> decltype(fn());

  redis::RedisClient client_;
  TrajectoryStoreOptions options_;
};

}  // namespace spotlight::store
