#pragma once
// Counter-based noise for seeded sampling (docs/algorithm.md).
//
// A seed fixes the whole noise stream of a sample: the initial latent (step 0) and the eps of
// every SDE step (step k+1 for the step leaving grid point k). Each value is a pure function of
// (seed, step, element index): Philox4x32-10 keyed by the 64-bit seed, counter
// (element / 4, step), then Box-Muller in double precision rounded to float, with log, sin and
// cos as fixed polynomials (philox_math.hpp) rather than libm's, whose last bits vary between
// libraries. The result does not depend on batch composition, thread count, SP rank layout,
// machine or device: the CUDA twin (philox_cuda.hpp) computes the same floats.

#include <cstdint>

namespace spotlight::kernels {

struct PhiloxBlock {
  uint32_t v[4];
};

// One Philox4x32-10 block: counter (c0..c3) under key (k0, k1).
PhiloxBlock philox4x32_10(PhiloxBlock counter, uint32_t k0, uint32_t k1);

// Writes n standard-normal floats for elements [offset, offset + n) of stream (seed, step).
void philox_normal_cpu(uint64_t seed, uint64_t step, int64_t offset, int64_t n, float* out);

}  // namespace spotlight::kernels
