#include <cmath>
#include <numbers>

#include "kernels/philox/philox.hpp"

namespace spotlight::kernels {
namespace {

constexpr uint32_t kMul0 = 0xD2511F53u;
constexpr uint32_t kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;
constexpr uint32_t kWeyl1 = 0xBB67AE85u;

inline void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

// Uniform in the open interval (0, 1): never 0, so log() is finite.
inline double to_open_unit(uint32_t x) {
  return (static_cast<double>(x) + 0.5) * 0x1p-32;
}

}  // namespace

PhiloxBlock philox4x32_10(PhiloxBlock c, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kMul0, c.v[0], hi0, lo0);
    mulhilo(kMul1, c.v[2], hi1, lo1);
    c = PhiloxBlock{{hi1 ^ c.v[1] ^ k0, lo1, hi0 ^ c.v[3] ^ k1, lo0}};
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return c;
}

void philox_normal_cpu(uint64_t seed, uint64_t step, int64_t offset, int64_t n, float* out) {
  const auto k0 = static_cast<uint32_t>(seed);
  const auto k1 = static_cast<uint32_t>(seed >> 32);
  const int64_t end = offset + n;
  int64_t e = offset;
  while (e < end) {
    const auto block = static_cast<uint64_t>(e / 4);
    const PhiloxBlock r =
        philox4x32_10(PhiloxBlock{{static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                                   static_cast<uint32_t>(step), static_cast<uint32_t>(step >> 32)}},
                      k0, k1);
    double z[4];
    for (int pair = 0; pair < 2; ++pair) {
      const double radius = std::sqrt(-2.0 * std::log(to_open_unit(r.v[2 * pair])));
      const double angle = 2.0 * std::numbers::pi * to_open_unit(r.v[2 * pair + 1]);
      z[2 * pair] = radius * std::cos(angle);
      z[2 * pair + 1] = radius * std::sin(angle);
    }
    for (int lane = static_cast<int>(e % 4); lane < 4 && e < end; ++lane, ++e) {
      out[e - offset] = static_cast<float>(z[lane]);
    }
  }
}

}  // namespace spotlight::kernels
