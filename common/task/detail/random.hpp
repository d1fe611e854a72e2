#pragma once
// Internal: a small platform-independent PRNG and hash, so prompts and renders are bit-identical
// on every machine and standard library (std:: distributions are implementation-defined).

#include <cstdint>
#include <string_view>

namespace spotlight::task::detail {

// SplitMix64 finaliser: a bijective 64-bit mix.
constexpr uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// FNV-1a over the bytes of `text`, then mixed.
constexpr uint64_t hash64(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return mix64(h);
}

// SplitMix64 stream. `stream` separates independent uses of the same seed.
class Rng {
 public:
  Rng(uint64_t seed, uint64_t stream)
      : state_(mix64(seed ^ mix64(stream + 0x9e3779b97f4a7c15ULL))) {}

  uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return mix64(state_);
  }
  // Uniform in [0, n); n >= 1. Multiply-shift (bias below 2^-32 for the n used here).
  int uniform_int(int n) {
    return static_cast<int>(((next() >> 32) * static_cast<uint64_t>(n)) >> 32);
  }
  // Uniform in [lo, hi] inclusive.
  int uniform_range(int lo, int hi) { return lo + uniform_int(hi - lo + 1); }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

}  // namespace spotlight::task::detail
