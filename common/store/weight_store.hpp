#pragma once
// Versioned model-weight blobs (docs/contracts.md: weights travel as a small notice {version,
// checksum, location}; explorers pull the blob).
//
//   publish(v, bytes)   chunks, then the manifest {version, bytes, chunks, checksum}, then
//                       `latest` := max(latest, v) atomically with the manifest. A reader that
//                       sees v as latest (or sees its manifest) finds every chunk in place.
//   fetch(v)            the bytes, verified against the manifest (CorruptWeights /
//                       ChecksumMismatch naming v); nullopt if v does not exist (or was
//                       garbage-collected meanwhile).
//   gc(keep)            deletes all but the newest `keep` versions, never `latest`.
//
// Signed manifests (a store given a ManifestKey source): publish() signs each manifest with
// HMAC-SHA256 under the run's key (the key seed tasks are signed with); fetch() and manifest()
// refuse (UntrustedWeights naming the version) a manifest that is unsigned, signed with another
// key, or whose signature does not match its fields. The checksum then detects substitution,
// not only corruption: whoever can write the weight keys but not read the key cannot make a
// reader load other weights. A store without a key source neither signs nor checks.
//
// Publishing a version again with the same content is a no-op; with different content it throws
// VersionConflict. Versions are integers chosen by the publisher (the trainer's weights version).
// Errors: StoreUnavailable (back off, retry), StoreError otherwise (common/store/errors.hpp).
// Thread-compatible (one connection): one store object per thread.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/store/errors.hpp"

namespace spotlight::store {

// The key manifests are signed with.
struct ManifestKey {
  std::string id;      // names the key in manifests and errors (not secret)
  std::string secret;  // HMAC-SHA256 key bytes
};

struct WeightManifest {
  std::int64_t version = 0;
  std::uint64_t bytes = 0;        // total size
  std::uint64_t chunk_bytes = 0;  // size of every chunk but the last
  std::uint64_t chunks = 0;
  std::string checksum;                // hex, of the whole blob
  std::string algorithm;               // of the checksum, e.g. "xxh64"
  std::int64_t published_unix_ms = 0;  // wall clock of the publisher (cross-process timestamp)
  std::string key_id;                  // of the key that signed it; empty: unsigned
  std::string signature;  // hex HMAC-SHA256 of manifest_signing_text(); empty: unsigned

  bool operator==(const WeightManifest&) const = default;
};

// What a manifest's signature covers: every field but the signature, behind a domain tag.
std::string manifest_signing_text(const WeightManifest& m);

class WeightStore {
 public:
  virtual ~WeightStore() = default;

  // Stores `bytes` as `version` (see above); returns its manifest. Returns after every part is
  // written to the store (as durable as the store's persistence).
  virtual WeightManifest publish(std::int64_t version, std::string_view bytes) = 0;
  virtual std::optional<std::string> fetch(std::int64_t version) = 0;
  virtual std::optional<WeightManifest> manifest(std::int64_t version) = 0;
  // The newest published version, if any.
  virtual std::optional<std::int64_t> latest_version() = 0;
  // Published versions (with a manifest), ascending.
  virtual std::vector<std::int64_t> versions() = 0;
  // Deletes every version but the newest `keep` (>= 1) and `latest`; returns what it deleted
  // (including parts of publishes that never completed).
  virtual std::vector<std::int64_t> gc(int keep) = 0;
};

}  // namespace spotlight::store
