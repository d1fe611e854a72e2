#include "common/store/redis_trajectory_store.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace spotlight::store {

namespace {

// Keys deleted per command (one round trip per batch).
constexpr std::size_t kEraseBatch = 512;

}  // namespace

void TrajectoryStoreOptions::validate() const {
  if (key_prefix.empty()) throw InvalidStoreOptions("key_prefix", "must not be empty");
  if (ttl.count() <= 0) throw InvalidStoreOptions("ttl", "must be > 0");
}

RedisTrajectoryStore::RedisTrajectoryStore(redis::RedisOptions redis,
                                           TrajectoryStoreOptions options)
    : client_(std::move(redis)), options_((options.validate(), std::move(options))) {}

std::string RedisTrajectoryStore::redis_key(std::string_view task_id) const {
  std::string out;
  out.reserve(options_.key_prefix.size() + 1 + task_id.size());
  out.append(options_.key_prefix).append(":").append(task_id);
  return out;
}

template <typename Fn>
auto RedisTrajectoryStore::call(std::string_view what, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const redis::RedisError& e) {
    throw_store_error("trajectory store (" + std::string(what) + ")", e);
  }
}

void RedisTrajectoryStore::put(std::string_view task_id, std::string_view bytes) {
  const std::string key = redis_key(task_id);
  const std::string ttl = std::to_string(options_.ttl.count());
  call(key, [&] { client_.command({"SET", key, bytes, "PX", ttl}); });
}

std::optional<std::string> RedisTrajectoryStore::get(std::string_view task_id) {
  const std::string key = redis_key(task_id);
  return call(key, [&] { return client_.command({"GET", key}).as_optional_string(); });
}

std::int64_t RedisTrajectoryStore::erase(std::span<const std::string> task_ids) {
  std::int64_t erased = 0;
  for (std::size_t begin = 0; begin < task_ids.size(); begin += kEraseBatch) {
    std::vector<std::string> argv{"UNLINK"};
    for (std::size_t i = begin; i < std::min(task_ids.size(), begin + kEraseBatch); ++i)
      argv.push_back(redis_key(task_ids[i]));
    erased += call(argv[1], [&] { return client_.command(argv).as_integer(); });
  }
  return erased;
}

}  // namespace spotlight::store
