// The CUDA twin against the CPU reference, bit for bit (label gpu). No LibTorch: the kernel needs
// only the CUDA runtime. Skips, saying why, where this build has no CUDA compiler or the machine
// no usable GPU.
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/philox/philox.hpp"
#ifdef SPOTLIGHT_HAVE_CUDA_KERNELS
#include "kernels/philox/philox_cuda.hpp"
#endif

namespace spotlight::kernels {
namespace {

#ifdef SPOTLIGHT_HAVE_CUDA_KERNELS

// Compares as bit patterns: -0.0 != 0.0 and every last bit counts.
void expect_bit_equal(const std::vector<uint64_t>& seeds, uint64_t step, int64_t per_sample) {
  const std::vector<float> gpu = philox_normal_cuda_to_host(seeds, step, per_sample);
  std::vector<float> cpu(seeds.size() * per_sample);
  for (size_t b = 0; b < seeds.size(); ++b)
    philox_normal_cpu(seeds[b], step, 0, per_sample, cpu.data() + b * per_sample);
  ASSERT_EQ(gpu.size(), cpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    uint32_t a = 0, g = 0;
    std::memcpy(&a, &cpu[i], sizeof a);
    std::memcpy(&g, &gpu[i], sizeof g);
    ASSERT_EQ(a, g) << "sample " << i / per_sample << " (seed " << seeds[i / per_sample]
                    << ") element " << i % per_sample << " step " << step << ": cpu " << cpu[i]
                    << ", gpu " << gpu[i];
  }
}

TEST(PhiloxCuda, EqualsTheCpuReferenceBitForBit) {
  if (auto why = cuda_unavailable_reason()) GTEST_SKIP() << "no usable CUDA device: " << *why;
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  // Key halves and counter halves at their edges; element counts not a multiple of 4.
  const std::vector<uint64_t> seeds{
      0, 1, 0xFFFFFFFFull, 0x100000000ull, max, 0x9E3779B97F4A7C15ull};
  for (uint64_t step : {uint64_t{0}, uint64_t{1}, uint64_t{7}, (uint64_t{1} << 32) + 3, max}) {
    for (int64_t per_sample : {int64_t{1}, int64_t{3}, int64_t{5}, int64_t{3 * 32 * 32}}) {
      expect_bit_equal(seeds, step, per_sample);
    }
  }
}

TEST(PhiloxCuda, EqualsTheCpuReferenceOnLargeLatentsAndBatches) {
  if (auto why = cuda_unavailable_reason()) GTEST_SKIP() << "no usable CUDA device: " << *why;
  // Qwen-Image-sized latents (16 x 128 x 128, plus 3 so the last block is partial) and a batch
  // wider than one launch's 256 seeds.
  expect_bit_equal({42, 43}, 3, 16 * 128 * 128 + 3);
  std::vector<uint64_t> many(600);
  for (size_t i = 0; i < many.size(); ++i)
    many[i] = 1000003 * i + 17;
  expect_bit_equal(many, 11, 1027);
}

#else

TEST(PhiloxCuda, EqualsTheCpuReferenceBitForBit) {
  GTEST_SKIP() << "this build has no CUDA compiler (no nvcc at configure time): the CUDA twin "
                  "was not compiled";
}

#endif

}  // namespace
}  // namespace spotlight::kernels
