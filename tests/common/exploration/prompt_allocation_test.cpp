// Per-prompt allocation logic: the Beta posterior's update, the candidates a prompt needs for
// contrast, the enqueue order (every prompt's first G, then the needier prompts' extra candidates
// sooner) and the satisfaction test against brute force.

#include "common/exploration/prompt_allocation.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <gtest/gtest.h>

namespace spotlight::exploration {
namespace {

TEST(PromptAllocationTest, PartialCreditCountsFractionally) {
  BetaPosterior p;
  p.add(1.0);
  p.add(0.25);
  p.add(7.0);  // clamped to 1
  p.add(std::nan(""));
  EXPECT_DOUBLE_EQ(p.a, 1 + 1 + 0.25 + 1);
  EXPECT_DOUBLE_EQ(p.b, 1 + 0 + 0.75 + 0);
}

TEST(PromptAllocationTest, RareSuccessNeedsMoreCandidates) {
  AllocationOptions o;
  o.group_size = 4;
  o.probability = 0.9;
  const BetaPosterior even{5, 5};
  const BetaPosterior rare{1, 30};
  const BetaPosterior certain{40, 1};
  // p = 1/2: 1 - 2 * 2^-n >= 0.9 first at n = 5.
  EXPECT_EQ(candidates_needed(even, o, 32), 5);
  // p = 1/31: 1 - p^n - (1-p)^n >= 0.9 needs n >= 71, beyond the cap.
  EXPECT_EQ(candidates_needed(rare, o, 32), 32);
  EXPECT_GT(candidates_needed(BetaPosterior{1, 6}, o, 32), 4);
  EXPECT_LT(candidates_needed(BetaPosterior{1, 6}, o, 32), 32);
  EXPECT_EQ(candidates_needed(certain, o, 64), 64);
  EXPECT_EQ(candidates_needed(even, o, 3), 3) << "a cap below G is the cap";
}

TEST(PromptAllocationTest, OrderGivesEveryPromptItsGroupFirstThenTheNeedyOnes) {
  const std::vector<int> need{4, 12, 4};
  const auto order = exploration_order(need, 4, 12);
  ASSERT_EQ(order.size(), 36u);
  EXPECT_EQ(std::set(order.begin(), order.end()).size(), 36u) << "every pair once";
  // The first 12: candidates 0..3 of every prompt.
  for (int k = 0; k < 12; ++k)
    EXPECT_LT(order[static_cast<std::size_t>(k)].second, 4) << k;
  // Then prompt 1 (need 12) has all of its extra 8 before the others' 5th.
  std::vector<int> next;
  for (int k = 12; k < 20; ++k)
    next.push_back(order[static_cast<std::size_t>(k)].first);
  EXPECT_EQ(next, std::vector<int>(8, 1));
}

TEST(PromptAllocationTest, ContrastReachedMatchesBruteForce) {
  AllocationOptions o;
  o.group_size = 3;
  o.contrast_target = 0.05;
  const std::vector<double> alike{0.5, 0.5, 0.5, 0.5};
  EXPECT_FALSE(contrast_reached(alike, o));
  EXPECT_TRUE(all_alike(alike));
  EXPECT_FALSE(contrast_reached({0.0, 1.0}, o)) << "fewer than G";
  // Best 3 of {0, 0, 0, 0.6}: {0, 0, 0.6}, variance 0.08 >= 0.05.
  EXPECT_TRUE(contrast_reached({0, 0, 0, 0.6}, o));
  // Best 3 of {0, 0, 0.4}: variance 0.0356 < 0.05.
  EXPECT_FALSE(contrast_reached({0, 0, 0.4}, o));
  EXPECT_FALSE(all_alike({0, 0, 0.4}));
  EXPECT_FALSE(all_alike({0.3}));
}

TEST(PromptAllocationTest, BadOptionsAreRejected) {
  AllocationOptions o;
  o.contrast_target = 0;
  EXPECT_THROW(o.validate(), std::invalid_argument);
  o = {};
  o.probability = 1;
  EXPECT_THROW(o.validate(), std::invalid_argument);
}

}  // namespace
}  // namespace spotlight::exploration
