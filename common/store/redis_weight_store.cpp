#include "common/store/redis_weight_store.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock/unix_time.hpp"
#include "common/security/hmac.hpp"
#include "common/store/checksum.hpp"
#include "common/store/lua_scripts.hpp"  // generated from common/store/lua/*.lua

namespace spotlight::store {
namespace {

using redis::Reply;

// common/store/lua/commit_weights.lua: the manifest, then `latest` moved forward, atomically.
const redis::Script& commit_script() {
  static const redis::Script script(lua::kCommitWeights);
  return script;
}

constexpr std::uint64_t kMinChunkBytes = 1u << 10;
constexpr std::uint64_t kMaxChunkBytes = 256u << 20;
constexpr std::size_t kDeleteBatch = 512;

std::int64_t parse_int(const std::string& text, std::int64_t version, const char* what) {
  try {
    std::size_t used = 0;
    const long long v = std::stoll(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw CorruptWeights(
      version, std::string("manifest field '") + what + "' is not an integer: '" + text + "'");
}

}  // namespace

std::string manifest_signing_text(const WeightManifest& m) {
  return "spotlight-weights-manifest-v1\n" + std::to_string(m.version) + "\n" +
         std::to_string(m.bytes) + "\n" + std::to_string(m.chunk_bytes) + "\n" +
         std::to_string(m.chunks) + "\n" + m.checksum + "\n" + m.algorithm + "\n" +
         std::to_string(m.published_unix_ms) + "\n" + m.key_id;
}

void WeightStoreOptions::validate() const {
  if (key_prefix.empty()) throw InvalidStoreOptions("key_prefix", "must not be empty");
  if (chunk_bytes < kMinChunkBytes || chunk_bytes > kMaxChunkBytes) {
    throw InvalidStoreOptions("chunk_bytes",
                              "must be in [1 KiB, 256 MiB], got " + std::to_string(chunk_bytes));
  }
}

RedisWeightStore::RedisWeightStore(redis::RedisOptions redis, WeightStoreOptions options)
    : RedisWeightStore(redis::RedisClient(std::move(redis)), std::move(options)) {}

RedisWeightStore::RedisWeightStore(redis::RedisClient client, WeightStoreOptions options)
    : options_(std::move(options)), client_(std::move(client)) {
  options_.validate();
  base_ = options_.key_prefix + ":weights";
}

std::string RedisWeightStore::chunk_key(std::int64_t version, std::uint64_t index) const {
  return base_ + ":" + std::to_string(version) + ":" + std::to_string(index);
}

std::string RedisWeightStore::manifest_key(std::int64_t version) const {
  return base_ + ":" + std::to_string(version) + ":manifest";
}

template <typename Fn>
auto RedisWeightStore::call(std::int64_t version, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const redis::RedisError& e) {
    throw_store_error("weights " + base_ + " version " + std::to_string(version), e);
  }
}

std::optional<WeightManifest> RedisWeightStore::read_manifest(std::int64_t version) {
  const Reply r = client_.command({"HGETALL", manifest_key(version)});
  const auto& fields = r.as_array();
  if (fields.empty()) return std::nullopt;
  WeightManifest m;
  int seen = 0;
  for (std::size_t i = 0; i + 1 < fields.size(); i += 2) {
    const std::string& name = fields[i].as_string();
    const std::string& value = fields[i + 1].as_string();
    if (name == "version") {
      m.version = parse_int(value, version, "version"), ++seen;
    } else if (name == "bytes") {
      m.bytes = static_cast<std::uint64_t>(parse_int(value, version, "bytes")), ++seen;
    } else if (name == "chunk_bytes") {
      m.chunk_bytes = static_cast<std::uint64_t>(parse_int(value, version, "chunk_bytes")), ++seen;
    } else if (name == "chunks") {
      m.chunks = static_cast<std::uint64_t>(parse_int(value, version, "chunks")), ++seen;
    } else if (name == "checksum") {
      m.checksum = value, ++seen;
    } else if (name == "algorithm") {
      m.algorithm = value, ++seen;
    } else if (name == "published_unix_ms") {
      m.published_unix_ms = parse_int(value, version, "published_unix_ms");
    } else if (name == "key_id") {
      m.key_id = value;
    } else if (name == "signature") {
      m.signature = value;
    }
  }
  if (seen != 6 || m.version != version) {
    throw CorruptWeights(version, "manifest " + manifest_key(version) + " is incomplete");
  }
  return m;
}

std::optional<WeightManifest> RedisWeightStore::read_trusted_manifest(std::int64_t version) {
  auto m = read_manifest(version);
  if (!m || !options_.manifest_key) return m;
  if (m->signature.empty()) {
    throw UntrustedWeights(version,
                           "its manifest is unsigned (this store requires manifests "
                           "signed with the run's key)");
  }
  const auto key = options_.manifest_key();
  if (!key) throw UntrustedWeights(version, "no run key to check its manifest's signature yet");
  if (m->key_id != key->id) {
    throw UntrustedWeights(version, "its manifest is signed with key " + m->key_id +
                                        ", not with the run's key " + key->id);
  }
  const auto signature = security::from_hex(m->signature);
  if (!signature ||
      !security::equal_constant_time(
          *signature, security::hmac_sha256(key->secret, manifest_signing_text(*m)))) {
    throw UntrustedWeights(version, "its manifest's signature does not match its fields (key " +
                                        key->id + "): substituted or altered");
  }
  return m;
}

WeightManifest RedisWeightStore::publish(std::int64_t version, std::string_view bytes) {
  if (version < 0 || version > kMaxWeightsVersion) {
    throw StoreError("weights version " + std::to_string(version) + " out of range [0, 2^53)");
  }
  WeightManifest m;
  m.version = version;
  m.bytes = bytes.size();
  m.chunk_bytes = options_.chunk_bytes;
  m.chunks = (bytes.size() + options_.chunk_bytes - 1) / options_.chunk_bytes;
  m.checksum = to_hex(xxh64(bytes));
  m.algorithm = kChecksumAlgorithm;
  m.published_unix_ms = clock::unix_ms();
  if (options_.manifest_key) {
    const auto key = call(version, [&] { return options_.manifest_key(); });
    if (!key) {
      throw StoreError("weights version " + std::to_string(version) +
                       ": no run key to sign its manifest with");
    }
    m.key_id = key->id;
    m.signature = security::to_hex(security::hmac_sha256(key->secret, manifest_signing_text(m)));
  }
  return call(version, [&] {
    if (auto existing = read_manifest(version)) {
      if (existing->checksum != m.checksum || existing->bytes != m.bytes) {
        throw VersionConflict(version, existing->checksum, m.checksum);
      }
      return *existing;  // already published: nothing to do
    }
    const std::string v = std::to_string(version);
    client_.command({"ZADD", base_ + ":versions", v, v});  // gc can find even a partial publish
    for (std::uint64_t i = 0; i < m.chunks; ++i) {
      const std::uint64_t offset = i * m.chunk_bytes;
      client_.command({"SET", chunk_key(version, i), bytes.substr(offset, m.chunk_bytes)});
    }
    delete_chunks_from(version, m.chunks);  // leftovers of an earlier, larger partial publish
    std::vector<std::string> argv{v,
                                  std::to_string(m.bytes),
                                  std::to_string(m.chunk_bytes),
                                  std::to_string(m.chunks),
                                  m.checksum,
                                  m.algorithm,
                                  std::to_string(m.published_unix_ms)};
    if (!m.signature.empty()) {
      argv.push_back(m.key_id);
      argv.push_back(m.signature);
    }
    const std::vector<std::string_view> args(argv.begin(), argv.end());
    const std::string manifest = manifest_key(version);
    const std::string latest = base_ + ":latest";
    const std::string_view keys[] = {manifest, latest};
    client_.eval(commit_script(), keys, args);
    return m;
  });
}

std::optional<std::string> RedisWeightStore::fetch(std::int64_t version) {
  return call(version, [&]() -> std::optional<std::string> {
    const auto m = read_trusted_manifest(version);
    if (!m) return std::nullopt;
    if (m->algorithm != kChecksumAlgorithm) {
      throw CorruptWeights(version, "unknown checksum algorithm '" + m->algorithm + "'");
    }
    if (m->chunk_bytes == 0 ? m->bytes != 0
                            : m->chunks != (m->bytes + m->chunk_bytes - 1) / m->chunk_bytes) {
      throw CorruptWeights(version, "manifest sizes disagree (bytes " + std::to_string(m->bytes) +
                                        ", chunk_bytes " + std::to_string(m->chunk_bytes) +
                                        ", chunks " + std::to_string(m->chunks) + ")");
    }
    std::string out;
    out.reserve(m->bytes);
    Xxh64 hash;
    for (std::uint64_t i = 0; i < m->chunks; ++i) {
      const Reply r = client_.command({"GET", chunk_key(version, i)});
      if (r.is_nil()) {
        if (!read_manifest(version)) return std::nullopt;  // garbage-collected meanwhile
        throw CorruptWeights(version, "chunk " + std::to_string(i) + " of " +
                                          std::to_string(m->chunks) + " is missing");
      }
      const std::string& chunk = r.as_string();
      const std::uint64_t expected =
          i + 1 < m->chunks ? m->chunk_bytes : m->bytes - m->chunk_bytes * (m->chunks - 1);
      if (chunk.size() != expected) {
        throw CorruptWeights(version, "chunk " + std::to_string(i) + " has " +
                                          std::to_string(chunk.size()) + " bytes, expected " +
                                          std::to_string(expected));
      }
      hash.update(chunk);
      out += chunk;
    }
    const std::string actual = to_hex(hash.digest());
    if (actual != m->checksum) throw ChecksumMismatch(version, m->checksum, actual);
    return out;
  });
}

std::optional<WeightManifest> RedisWeightStore::manifest(std::int64_t version) {
  return call(version, [&] { return read_trusted_manifest(version); });
}

std::optional<std::int64_t> RedisWeightStore::latest_version() {
  return call(-1, [&]() -> std::optional<std::int64_t> {
    const auto latest = client_.command({"GET", base_ + ":latest"}).as_optional_string();
    if (!latest) return std::nullopt;
    return parse_int(*latest, -1, "latest");
  });
}

std::vector<std::int64_t> RedisWeightStore::versions() {
  return call(-1, [&] {
    const Reply r = client_.command({"ZRANGE", base_ + ":versions", "0", "-1"});
    std::vector<std::int64_t> all;
    std::vector<std::vector<std::string>> exists;
    for (const Reply& v : r.as_array()) {
      all.push_back(parse_int(v.as_string(), -1, "versions"));
      exists.push_back({"EXISTS", manifest_key(all.back())});
    }
    const auto replies = client_.pipeline(exists);
    std::vector<std::int64_t> published;
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (replies[i].as_integer() == 1) published.push_back(all[i]);
    }
    return published;
  });
}

void RedisWeightStore::delete_chunks_from(std::int64_t version, std::uint64_t first) {
  for (std::uint64_t i = first;; i += kDeleteBatch) {
    std::vector<std::string> argv = {"UNLINK"};
    for (std::uint64_t j = i; j < i + kDeleteBatch; ++j)
      argv.push_back(chunk_key(version, j));
    if (client_.command(argv).as_integer() == 0) return;  // chunks are contiguous from 0
  }
}

std::vector<std::int64_t> RedisWeightStore::gc(int keep) {
  if (keep < 1) throw StoreError("weights gc: keep must be >= 1, got " + std::to_string(keep));
  const auto latest = latest_version();
  return call(-1, [&] {
    const Reply r = client_.command({"ZRANGE", base_ + ":versions", "0", "-1"});  // ascending
    std::vector<std::int64_t> all;
    for (const Reply& v : r.as_array())
      all.push_back(parse_int(v.as_string(), -1, "versions"));
    std::vector<std::int64_t> deleted;
    const std::size_t doomed = all.size() > static_cast<std::size_t>(keep) ? all.size() - keep : 0;
    for (std::size_t i = 0; i < doomed; ++i) {
      const std::int64_t version = all[i];
      if (latest && version == *latest) continue;
      // Manifest first: a concurrent fetch then reports absence, not corruption.
      client_.command({"UNLINK", manifest_key(version)});
      delete_chunks_from(version, 0);
      client_.command({"ZREM", base_ + ":versions", std::to_string(version)});
      deleted.push_back(version);
    }
    return deleted;
  });
}

}  // namespace spotlight::store
