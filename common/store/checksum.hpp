#pragma once
// Checksums for blobs: XXH64 (the 64-bit xxHash algorithm) from libxxhash, one-shot or streaming;
// bit-compatible with `xxh64sum`. Several GB/s per core.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

struct XXH64_state_s;  // <xxhash.h>, kept out of this header

namespace spotlight::store {

// The algorithm name recorded next to checksums (WeightManifest::algorithm).
inline constexpr const char* kChecksumAlgorithm = "xxh64";

// Streaming XXH64: update() in any pieces gives the same digest as one update() of the whole.
// Movable, not copyable.
class Xxh64 {
 public:
  explicit Xxh64(std::uint64_t seed = 0);  // throws std::bad_alloc
  void update(const void* data, std::size_t size);
  void update(std::string_view data) { update(data.data(), data.size()); }
  std::uint64_t digest() const;

 private:
  struct Free {
    void operator()(XXH64_state_s* state) const;
  };
  std::unique_ptr<XXH64_state_s, Free> state_;
};

std::uint64_t xxh64(std::string_view data, std::uint64_t seed = 0);

// 16 lowercase hex digits, most significant first (as xxh64sum prints it).
std::string to_hex(std::uint64_t value);

}  // namespace spotlight::store
