#include "common/store/redis_key_value_store.hpp"

#include <algorithm>
#include <thread>
#include <utility>
#include <vector>

namespace spotlight::store {

RedisKeyValueStore::RedisKeyValueStore(redis::RedisOptions redis, std::string key_prefix)
    : RedisKeyValueStore(redis::RedisClient(std::move(redis)), std::move(key_prefix)) {}

RedisKeyValueStore::RedisKeyValueStore(redis::RedisClient client, std::string key_prefix)
    : client_(std::move(client)), prefix_(std::move(key_prefix)) {
  if (prefix_.empty()) throw InvalidStoreOptions("key_prefix", "must not be empty");
}

std::string RedisKeyValueStore::redis_key(std::string_view key) const {
  std::string out;
  out.reserve(prefix_.size() + 1 + key.size());
  out.append(prefix_).append(":").append(key);
  return out;
}

template <typename Fn>
auto RedisKeyValueStore::call(std::string_view key, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const redis::RedisError& e) {
    throw_store_error("store key " + redis_key(key), e);
  }
}

void RedisKeyValueStore::put(std::string_view key, std::string_view value) {
  call(key, [&] { client_.command({"SET", redis_key(key), value}); });
}

bool RedisKeyValueStore::put_if_absent(std::string_view key, std::string_view value) {
  return call(key, [&] {
    return client_.command({"SET", redis_key(key), value, "NX"}).is_status();
  });
}

std::optional<std::string> RedisKeyValueStore::get(std::string_view key) {
  return call(key, [&] { return client_.command({"GET", redis_key(key)}).as_optional_string(); });
}

bool RedisKeyValueStore::erase(std::string_view key) {
  return call(key, [&] { return client_.command({"DEL", redis_key(key)}).as_integer() == 1; });
}

std::int64_t RedisKeyValueStore::add(std::string_view key, std::int64_t delta) {
  return call(key, [&] {
    return client_.command({"INCRBY", redis_key(key), std::to_string(delta)}).as_integer();
  });
}

std::int64_t RedisKeyValueStore::counter(std::string_view key) {
  const auto value = get(key);
  if (!value) return 0;
  try {
    std::size_t used = 0;
    const long long n = std::stoll(*value, &used);
    if (used == value->size()) return n;
  } catch (const std::exception&) {
  }
  throw StoreError("store key " + redis_key(key) + ": not an integer counter");
}

bool RedisKeyValueStore::wait(std::span<const std::string> keys,
                              std::chrono::milliseconds timeout) {
  if (keys.empty()) return true;
  std::vector<std::string> argv = {"EXISTS"};
  for (const auto& k : keys)
    argv.push_back(redis_key(k));
  const auto present = [&] {
    return call(keys.front(), [&] { return client_.command(argv).as_integer(); }) ==
           static_cast<std::int64_t>(keys.size());
  };
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto delay = std::chrono::milliseconds(1);
  for (;;) {
    if (present()) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(delay, deadline - now));
    delay = std::min(delay * 2, std::chrono::milliseconds(50));
  }
}

}  // namespace spotlight::store
