#pragma once
// Small durable values and counters shared between services (c10d Store's set/get/add/wait).
// Keys are relative to the store's prefix; values are opaque bytes (keep them small: KiBs, not
// MiBs; blobs go to the WeightStore). Absence is std::nullopt, never an error.
//
// Errors: StoreUnavailable when the backing store cannot be reached (back off and retry),
// StoreError otherwise (common/store/errors.hpp).
// Thread-compatible (one connection): one store object per thread.

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/store/errors.hpp"

namespace spotlight::store {

inline constexpr std::chrono::milliseconds kDefaultWaitTimeout{30000};

class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;

  virtual void put(std::string_view key, std::string_view value) = 0;
  // Writes only when the key is absent; true if this call wrote it.
  virtual bool put_if_absent(std::string_view key, std::string_view value) = 0;
  virtual std::optional<std::string> get(std::string_view key) = 0;
  // True if the key existed.
  virtual bool erase(std::string_view key) = 0;
  // Atomically adds `delta` to the integer at `key` (absent = 0) and returns the new value.
  // A key holding something else than an integer throws StoreError naming the key.
  virtual std::int64_t add(std::string_view key, std::int64_t delta) = 0;
  // The integer at `key`, 0 when absent.
  virtual std::int64_t counter(std::string_view key) = 0;
  // Blocks until every key exists (true) or `timeout` passes (false). Polls with a back-off of
  // up to 50 ms, so it notices a key at most that late.
  virtual bool wait(std::span<const std::string> keys,
                    std::chrono::milliseconds timeout = kDefaultWaitTimeout) = 0;
};

}  // namespace spotlight::store
