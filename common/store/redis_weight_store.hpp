#pragma once
// WeightStore on Redis. Keys, under <key_prefix>:weights:
//   <v>:<i>         chunk i of version v (chunk_bytes each, the last one shorter)
//   <v>:manifest    hash {version, bytes, chunk_bytes, chunks, checksum, algorithm,
//   published_unix_ms[, key_id, signature]}
//   latest          the newest published version (set by the same script as the manifest)
//   versions        sorted set of versions with any stored part (for gc)
// One publisher per version at a time (two concurrent publishes of one version with different
// content can interleave chunks; the trainer is the only publisher). Redis errors are translated:
// RedisUnavailable -> StoreUnavailable, RedisAuthError -> StoreAccessDenied, others -> StoreError.
// Connects on first use. Thread-compatible (one connection): one object per thread.

#include <cstdint>
#include <functional>
#include <optional>

#include "common/redis/client.hpp"
#include "common/store/weight_store.hpp"

namespace spotlight::store {

inline constexpr std::uint64_t kDefaultChunkBytes = 4u << 20;                    // 4 MiB
inline constexpr std::int64_t kMaxWeightsVersion = (std::int64_t{1} << 53) - 1;  // exact in Lua

struct WeightStoreOptions {
  std::string key_prefix = "spotlight";
  std::uint64_t chunk_bytes = kDefaultChunkBytes;  // 1 KiB .. 256 MiB
  // Signs and checks manifests (weight_store.hpp) when set: called when a key is needed, returns
  // the run's key, or std::nullopt while there is none yet (a publish then throws StoreError; a
  // check throws UntrustedWeights). Empty: manifests are neither signed nor checked.
  std::function<std::optional<ManifestKey>()> manifest_key;

  // Throws InvalidStoreOptions naming the first bad field.
  void validate() const;
};

class RedisWeightStore final : public WeightStore {
 public:
  RedisWeightStore(redis::RedisOptions redis, WeightStoreOptions options);
  RedisWeightStore(redis::RedisClient client, WeightStoreOptions options);

  // `version` must be in [0, kMaxWeightsVersion] (StoreError otherwise).
  WeightManifest publish(std::int64_t version, std::string_view bytes) override;
  std::optional<std::string> fetch(std::int64_t version) override;
  std::optional<WeightManifest> manifest(std::int64_t version) override;
  std::optional<std::int64_t> latest_version() override;
  std::vector<std::int64_t> versions() override;
  std::vector<std::int64_t> gc(int keep) override;

  // The Redis key of chunk `index` of `version` (for tools and tests).
  std::string chunk_key(std::int64_t version, std::uint64_t index) const;
  std::string manifest_key(std::int64_t version) const;
  const WeightStoreOptions& options() const { return options_; }

 private:
  template <typename Fn>
  auto call(std::int64_t version, Fn&& fn) -> decltype(fn());
  std::optional<WeightManifest> read_manifest(std::int64_t version);
  // read_manifest() that, with a key source, refuses an untrusted manifest.
  std::optional<WeightManifest> read_trusted_manifest(std::int64_t version);
  void delete_chunks_from(std::int64_t version, std::uint64_t first);

  WeightStoreOptions options_;
  redis::RedisClient client_;
  std::string base_;  // <key_prefix>:weights
};

}  // namespace spotlight::store
