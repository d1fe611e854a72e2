#pragma once
// The arithmetic of the Philox noise, shared by the CPU reference (philox_cpu.cpp) and its CUDA
// twin (philox_cuda.cu) so that both compute the same floats bit for bit.
//
// Contract: integer operations and IEEE-754 double +, -, *, / and sqrt only (correctly rounded on
// x86-64 CPUs and NVIDIA GPUs alike), in a fixed order, and no fused multiply-add: the two
// translation units that include this header are compiled with -ffp-contract=off (host) and
// -fmad=false (nvcc). log, sin and cos are therefore polynomials here rather than calls to libm
// or CUDA's math library, whose last bits differ between implementations and versions. The
// polynomials are accurate to about 1e-16 relative: rounded to float, the results equal libm's
// Box-Muller except in rare last-bit cases (philox_test checks the distance).
//
// Include it only from those two files.

#include <cmath>
#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define SPOTLIGHT_PHILOX_FN __host__ __device__ __forceinline__
#else
#define SPOTLIGHT_PHILOX_FN inline
#endif

namespace spotlight::kernels::philox_math {

inline constexpr uint32_t kMul0 = 0xD2511F53u;
inline constexpr uint32_t kMul1 = 0xCD9E8D57u;
inline constexpr uint32_t kWeyl0 = 0x9E3779B9u;
inline constexpr uint32_t kWeyl1 = 0xBB67AE85u;

struct Block {
  uint32_t v[4];
};

// Philox4x32-10 (Salmon et al., SC'11): counter c under key (k0, k1).
SPOTLIGHT_PHILOX_FN Block philox4x32_10(Block c, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kMul0) * c.v[0];
    const uint64_t p1 = static_cast<uint64_t>(kMul1) * c.v[2];
    const auto hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const auto hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c = Block{{hi1 ^ c.v[1] ^ k0, lo1, hi0 ^ c.v[3] ^ k1, lo0}};
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return c;
}

// Correctly rounded on both sides (IEEE-754 requires it of sqrt).
SPOTLIGHT_PHILOX_FN double ieee_sqrt(double x) {
#if defined(__CUDA_ARCH__)
  return __dsqrt_rn(x);
#else
  return std::sqrt(x);
#endif
}

// (x + 0.5) / 2^32: uniform in the open interval (0, 1), exact in double, never 0.
SPOTLIGHT_PHILOX_FN double open_unit(uint32_t x) {
  return (static_cast<double>(x) + 0.5) * 0x1p-32;
}

// Natural log of u = open_unit(x), for x a 32-bit integer: u = m * 2^e with m in [sqrt(1/2),
// sqrt(2)), log(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.1716, by its series to s^23.
SPOTLIGHT_PHILOX_FN double log_open_unit(uint32_t x) {
  // Exponent of x + 0.5 (in [0.5, 2^32)) without frexp: the position of x's highest set bit.
  int e = -1;
  double m = static_cast<double>(x) + 0.5;
  if (x != 0) {
    e = 31;
    while ((x >> e) == 0)
      --e;
    m /= static_cast<double>(uint64_t{1} << e);  // a power of two: exact, m in [1, 2)
  } else {
    m *= 2.0;  // 0.5 -> 1
  }
  e -= 32;  // u = m * 2^e
  constexpr double kSqrt2 = 1.41421356237309504880;
  if (m >= kSqrt2) {
    m *= 0.5;
    e += 1;
  }
  const double f = m - 1.0;  // exact (Sterbenz)
  const double s = f / (2.0 + f);
  const double s2 = s * s;
  double p = 1.0 / 23.0;
  p = p * s2 + 1.0 / 21.0;
  p = p * s2 + 1.0 / 19.0;
  p = p * s2 + 1.0 / 17.0;
  p = p * s2 + 1.0 / 15.0;
  p = p * s2 + 1.0 / 13.0;
  p = p * s2 + 1.0 / 11.0;
  p = p * s2 + 1.0 / 9.0;
  p = p * s2 + 1.0 / 7.0;
  p = p * s2 + 1.0 / 5.0;
  p = p * s2 + 1.0 / 3.0;
  const double log_m = 2.0 * s + 2.0 * s * s2 * p;
  // ln 2 split so that e * kLn2Hi is exact for |e| < 2^11 (kLn2Hi has 32 significant bits).
  constexpr double kLn2Hi = 6.93147180369123816490e-01;
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  const double de = static_cast<double>(e);
  return de * kLn2Hi + (log_m + de * kLn2Lo);
}

// sin and cos of 2 pi u for u = open_unit(x): 4u = q + r with q an integer quadrant and r in
// [-1/2, 1/2], then Taylor series of sin and cos at (pi/2) r, |(pi/2) r| <= pi/4.
SPOTLIGHT_PHILOX_FN void sincos_two_pi_open_unit(uint32_t x, double* sin_out, double* cos_out) {
  const double t = 4.0 * open_unit(x);  // exact
  // t + 0.5 is exact and positive, so the cast is floor: round half up, as on the device.
  const int q = static_cast<int>(t + 0.5);      // NOLINT(bugprone-incorrect-roundings)
  const double r = t - static_cast<double>(q);  // exact
  constexpr double kHalfPi = 1.57079632679489661923;
  const double a = r * kHalfPi;
  const double a2 = a * a;
  double sp = -1.0 / 121645100408832000.0;  // -1/19!
  sp = sp * a2 + 1.0 / 355687428096000.0;   // 1/17!
  sp = sp * a2 - 1.0 / 1307674368000.0;     // -1/15!
  sp = sp * a2 + 1.0 / 6227020800.0;        // 1/13!
  sp = sp * a2 - 1.0 / 39916800.0;          // -1/11!
  sp = sp * a2 + 1.0 / 362880.0;            // 1/9!
  sp = sp * a2 - 1.0 / 5040.0;              // -1/7!
  sp = sp * a2 + 1.0 / 120.0;               // 1/5!
  sp = sp * a2 - 1.0 / 6.0;                 // -1/3!
  const double sin_a = a + a * a2 * sp;
  double cp = 1.0 / 2432902008176640000.0;  // 1/20!
  cp = cp * a2 - 1.0 / 6402373705728000.0;  // -1/18!
  cp = cp * a2 + 1.0 / 20922789888000.0;    // 1/16!
  cp = cp * a2 - 1.0 / 87178291200.0;       // -1/14!
  cp = cp * a2 + 1.0 / 479001600.0;         // 1/12!
  cp = cp * a2 - 1.0 / 3628800.0;           // -1/10!
  cp = cp * a2 + 1.0 / 40320.0;             // 1/8!
  cp = cp * a2 - 1.0 / 720.0;               // -1/6!
  cp = cp * a2 + 1.0 / 24.0;                // 1/4!
  cp = cp * a2 - 0.5;                       // -1/2!
  const double cos_a = 1.0 + a2 * cp;
  switch (q & 3) {
    case 0:
      *sin_out = sin_a;
      *cos_out = cos_a;
      break;
    case 1:
      *sin_out = cos_a;
      *cos_out = -sin_a;
      break;
    case 2:
      *sin_out = -sin_a;
      *cos_out = -cos_a;
      break;
    default:
      *sin_out = -cos_a;
      *cos_out = sin_a;
      break;
  }
}

// The four standard normals of block `block` of stream (seed, step): elements 4*block .. +3.
// Philox keyed by the seed, counter (block, step); Box-Muller on lanes (0, 1) and (2, 3), in
// double precision, rounded to float.
SPOTLIGHT_PHILOX_FN void normal_block(uint64_t seed, uint64_t step, uint64_t block, float out[4]) {
  const Block r =
      philox4x32_10(Block{{static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                           static_cast<uint32_t>(step), static_cast<uint32_t>(step >> 32)}},
                    static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  for (std::size_t pair = 0; pair < 2; ++pair) {
    const double radius = ieee_sqrt(-2.0 * log_open_unit(r.v[2 * pair]));
    double sin_angle = 0.0, cos_angle = 0.0;
    sincos_two_pi_open_unit(r.v[2 * pair + 1], &sin_angle, &cos_angle);
    out[2 * pair] = static_cast<float>(radius * cos_angle);
    out[2 * pair + 1] = static_cast<float>(radius * sin_angle);
  }
}

}  // namespace spotlight::kernels::philox_math
