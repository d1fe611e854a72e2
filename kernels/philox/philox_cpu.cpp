// The CPU reference of the Philox noise. Compiled with -ffp-contract=off (kernels/philox/
// CMakeLists.txt): philox_math.hpp's contract for bit-equality with the CUDA twin.
#include "kernels/philox/philox.hpp"
#include "kernels/philox/philox_math.hpp"

namespace spotlight::kernels {

PhiloxBlock philox4x32_10(PhiloxBlock c, uint32_t k0, uint32_t k1) {
  const auto out =
      philox_math::philox4x32_10(philox_math::Block{{c.v[0], c.v[1], c.v[2], c.v[3]}}, k0, k1);
  return PhiloxBlock{{out.v[0], out.v[1], out.v[2], out.v[3]}};
}

void philox_normal_cpu(uint64_t seed, uint64_t step, int64_t offset, int64_t n, float* out) {
  const int64_t end = offset + n;
  int64_t e = offset;
  while (e < end) {
    float z[4];
    philox_math::normal_block(seed, step, static_cast<uint64_t>(e / 4), z);
    for (int lane = static_cast<int>(e % 4); lane < 4 && e < end; ++lane, ++e) {
      out[e - offset] = z[lane];
    }
  }
}

}  // namespace spotlight::kernels
