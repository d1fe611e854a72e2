#pragma once
// Checksums for blobs: XXH64 (the 64-bit xxHash algorithm, bit-compatible with the reference
// implementation and `xxh64sum`), one-shot or streaming. Several GB/s per core.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace spotlight::store {

// The algorithm name recorded next to checksums (WeightManifest::algorithm).
inline constexpr const char* kChecksumAlgorithm = "xxh64";

// Streaming XXH64: update() in any pieces gives the same digest as one update() of the whole.
class Xxh64 {
 public:
  explicit Xxh64(std::uint64_t seed = 0);
  void update(const void* data, std::size_t size);
  void update(std::string_view data) { update(data.data(), data.size()); }
  std::uint64_t digest() const;

 private:
  std::uint64_t seed_;
  std::uint64_t acc_[4];
  std::uint64_t total_ = 0;
  unsigned char buffer_[32];
  std::size_t buffered_ = 0;
};

std::uint64_t xxh64(std::string_view data, std::uint64_t seed = 0);

// 16 lowercase hex digits, most significant first (as xxh64sum prints it).
std::string to_hex(std::uint64_t value);

}  // namespace spotlight::store
