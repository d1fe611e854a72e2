#pragma once
// KeyValueStore on Redis strings under "<key_prefix>:<key>". Redis errors are translated:
// RedisUnavailable -> StoreUnavailable, RedisAuthError -> StoreAccessDenied, others -> StoreError.
// Connects on first use. Thread-compatible (one connection): one object per thread.

#include "common/redis/client.hpp"
#include "common/store/key_value_store.hpp"

namespace spotlight::store {

class RedisKeyValueStore final : public KeyValueStore {
 public:
  // Throws InvalidStoreOptions("key_prefix") when the prefix is empty.
  RedisKeyValueStore(redis::RedisOptions redis, std::string key_prefix);
  RedisKeyValueStore(redis::RedisClient client, std::string key_prefix);

  void put(std::string_view key, std::string_view value) override;
  bool put_if_absent(std::string_view key, std::string_view value) override;
  std::optional<std::string> get(std::string_view key) override;
  bool erase(std::string_view key) override;
  std::int64_t add(std::string_view key, std::int64_t delta) override;
  std::int64_t counter(std::string_view key) override;
  bool wait(std::span<const std::string> keys, std::chrono::milliseconds timeout) override;
  using KeyValueStore::wait;

  // The Redis key that holds `key`.
  std::string redis_key(std::string_view key) const;

 private:
  template <typename Fn>
  auto call(std::string_view key, Fn&& fn) -> decltype(fn());

  redis::RedisClient client_;
  std::string prefix_;
};

}  // namespace spotlight::store
