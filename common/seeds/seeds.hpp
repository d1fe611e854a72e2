#pragma once
// Deterministic seed derivation: every random choice of a run (its prompts, candidate seeds,
// validation seeds) is a pure function of the run seed and a path such as
// {iteration, prompt, candidate}, so a restarted or replayed run makes the same choices without
// storing generator state.

#include <cstdint>
#include <initializer_list>

namespace spotlight::seeds {

// SplitMix64 finaliser: a bijection on 64-bit values with good avalanche.
constexpr uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

constexpr uint64_t derive(uint64_t root, std::initializer_list<uint64_t> path) {
  uint64_t h = mix(root);
  for (uint64_t p : path)
    h = mix(h ^ mix(p + 0x632BE59BD9B4E019ull));
  return h;
}

// Stream tags that keep the derivations of different purposes apart.
enum Purpose : uint64_t {
  kPrompt = 1,
  kCandidate = 2,
  kValidation = 3,
  kPretrain = 4,
  kAudit = 5,
};

}  // namespace spotlight::seeds
