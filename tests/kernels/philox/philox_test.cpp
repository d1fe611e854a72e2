#include "kernels/philox/philox.hpp"

#include <cmath>

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
