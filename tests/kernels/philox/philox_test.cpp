#include "kernels/philox/philox.hpp"

#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <numbers>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "kernels/philox/noise.hpp"

namespace spotlight::kernels {
namespace {

// Known-answer vectors of Random123's philox4x32-10 (kat_vectors).
TEST(Philox, MatchesRandom123KnownAnswers) {
  struct Case {
    PhiloxBlock counter;
    uint32_t k0, k1;
    PhiloxBlock expected;
  };
  const Case cases[] = {
      {{{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}}},
      {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
       0xffffffff,
       0xffffffff,
       {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}}},
      {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
       0xa4093822,
       0x299f31d0,
       {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}},
  };
  for (const auto& c : cases) {
    const auto out = philox4x32_10(c.counter, c.k0, c.k1);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(out.v[i], c.expected.v[i]) << "lane " << i;
  }
}

// The textbook transform with libm's log, sin and cos, in double, rounded to float.
void libm_normal(uint64_t seed, uint64_t step, int64_t n, float* out) {
  for (int64_t block = 0; block * 4 < n; ++block) {
    const auto b = static_cast<uint64_t>(block);
    const PhiloxBlock r =
        philox4x32_10(PhiloxBlock{{static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32),
                                   static_cast<uint32_t>(step), static_cast<uint32_t>(step >> 32)}},
                      static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
    for (int pair = 0; pair < 2; ++pair) {
      const double u1 = (r.v[2 * pair] + 0.5) * 0x1p-32, u2 = (r.v[2 * pair + 1] + 0.5) * 0x1p-32;
      const double radius = std::sqrt(-2.0 * std::log(u1));
      const double angle = 2.0 * std::numbers::pi * u2;
      for (int k = 0; k < 2; ++k) {
        const int64_t e = block * 4 + 2 * pair + k;
        if (e < n)
          out[e] = static_cast<float>(radius * (k == 0 ? std::cos(angle) : std::sin(angle)));
      }
    }
  }
}

int64_t ulp_distance(float a, float b) {
  int32_t ia = 0, ib = 0;
  std::memcpy(&ia, &a, sizeof a);
  std::memcpy(&ib, &b, sizeof b);
  if (ia < 0) ia = std::numeric_limits<int32_t>::min() - ia;
  if (ib < 0) ib = std::numeric_limits<int32_t>::min() - ib;
  return std::abs(static_cast<int64_t>(ia) - ib);
}

// The polynomial log/sin/cos (philox_math.hpp) change the transform's floats only in rare last
// bits compared with libm's: the distribution is the textbook Box-Muller one.
TEST(Philox, PolynomialTransformIsWithinOneFloatUlpOfLibm) {
  const int64_t n = 1 << 21;
  std::vector<float> ours(n), libm(n);
  philox_normal_cpu(123, 4, 0, n, ours.data());
  libm_normal(123, 4, n, libm.data());
  int64_t differ = 0, worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t d = ulp_distance(ours[i], libm[i]);
    differ += d != 0;
    worst = std::max(worst, d);
  }
  std::cout << "[ measured ] " << differ << " of " << n << " floats differ from libm's, by at most "
            << worst << " ulp\n";
  EXPECT_LE(worst, 1);
  EXPECT_LE(differ, n / 10000);
}

// Fixed floats of the normal stream: a compiler, flag (fused multiply-add) or library change that
// alters the noise of a seed on some machine fails here. The libm-based transform that preceded
// philox_math.hpp gave the same floats.
TEST(Philox, NormalStreamKnownAnswers) {
  struct Case {
    uint64_t seed, step;
    int64_t offset;
    uint32_t bits[6];
  };
  const Case cases[] = {
      {0, 0, 0, {0x3f7dbb33, 0xbf6cb6b0, 0xbf1e1b9f, 0xbef6d1b2, 0xbe1d5357, 0x3e392a6d}},
      {std::numeric_limits<uint64_t>::max(),
       (uint64_t{1} << 32) + 5,
       1000001,
       {0xbe57a52c, 0x3f3918e9, 0xbeb24988, 0xbd071e04, 0x3c9ad7ad, 0x3f3a407c}},
      {42, 3, 6, {0x3bf43819, 0x3f68258a, 0x3f99b1c9, 0xbf696436, 0xbf59b8f7, 0xbf4b3601}},
  };
  for (const auto& c : cases) {
    float z[6];
    philox_normal_cpu(c.seed, c.step, c.offset, 6, z);
    for (int i = 0; i < 6; ++i) {
      uint32_t bits = 0;
      std::memcpy(&bits, &z[i], sizeof bits);
      EXPECT_EQ(bits, c.bits[i]) << "seed " << c.seed << " element " << c.offset + i;
    }
  }
}

TEST(Philox, NormalStreamHasUnitMomentsAndNoCorrelation) {
  const int64_t n = 200000;
  std::vector<float> z(n);
  philox_normal_cpu(42, 3, 0, n, z.data());
  double sum = 0, sq = 0, lag = 0;
  for (int64_t i = 0; i < n; ++i) {
    sum += z[i];
    sq += double(z[i]) * z[i];
    if (i) lag += double(z[i]) * z[i - 1];
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sq / n, 1.0, 0.01);
  EXPECT_NEAR(lag / n, 0.0, 0.01);
}

TEST(Philox, AnyWindowOfAStreamEqualsTheSameSliceOfTheWholeStream) {
  std::vector<float> whole(103);
  philox_normal_cpu(7, 11, 0, 103, whole.data());
  for (int64_t offset : {1, 2, 3, 4, 5, 50}) {
    std::vector<float> part(103 - offset);
    philox_normal_cpu(7, 11, offset, 103 - offset, part.data());
    for (size_t i = 0; i < part.size(); ++i)
      ASSERT_EQ(part[i], whole[offset + i]) << offset;
  }
}

TEST(Philox, StreamsDifferBySeedAndStep) {
  std::vector<float> a(16), b(16), c(16);
  philox_normal_cpu(1, 0, 0, 16, a.data());
  philox_normal_cpu(2, 0, 0, 16, b.data());
  philox_normal_cpu(1, 1, 0, 16, c.data());
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
}

TEST(SeededNormal, RowIsItsSeedsStreamWhateverTheBatch) {
  auto batch = seeded_normal({5, 9, 5}, 2, {3, 4, 4}, torch::kFloat);
  auto alone = seeded_normal({9}, 2, {3, 4, 4}, torch::kFloat);
  ASSERT_EQ(batch.sizes(), (std::vector<int64_t>{3, 3, 4, 4}));
  EXPECT_TRUE(torch::equal(batch[1], alone[0]));
  EXPECT_TRUE(torch::equal(batch[0], batch[2]));
  std::vector<float> raw(48);
  philox_normal_cpu(9, 2, 0, 48, raw.data());
  EXPECT_TRUE(torch::equal(alone[0].flatten(), torch::tensor(raw)));
}

}  // namespace
}  // namespace spotlight::kernels
