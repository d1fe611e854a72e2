#include "common/task/generator.hpp"

#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "common/task/errors.hpp"

namespace spotlight::task {
namespace {

Prompt mirrored(const Prompt& p) {
  Prompt m = p;
  std::swap(m.objects[0], m.objects[1]);
  switch (p.relation) {
    case Relation::kLeftOf:
      m.relation = Relation::kRightOf;
      break;
    case Relation::kRightOf:
      m.relation = Relation::kLeftOf;
      break;
    case Relation::kAbove:
      m.relation = Relation::kBelow;
      break;
    case Relation::kBelow:
      m.relation = Relation::kAbove;
      break;
    case Relation::kNone:
      break;
  }
  return m;
}

TEST(PromptGenerator, SampleIsAPureFunctionOfTheSeed) {
  const PromptGenerator a;
  const PromptGenerator b;
  const PromptGenerator copy = a;
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    ASSERT_EQ(a.sample(seed), b.sample(seed));
    ASSERT_EQ(a.sample(seed), copy.sample(seed));
  }
}

TEST(PromptGenerator, CoversEveryCategoryAndVaries) {
  const PromptGenerator generator;
  std::map<Category, int> per_category;
  std::map<Category, std::set<std::string>> texts;
  for (uint64_t seed = 0; seed < 5000; ++seed) {
    const Prompt p = generator.sample(seed);
    ++per_category[p.category];
    texts[p.category].insert(p.text());
  }
  for (Category category : kCategories) {
    // Equal weights: each category ~1000 of 5000.
    EXPECT_GT(per_category[category], 850) << name(category);
    EXPECT_LT(per_category[category], 1150) << name(category);
  }
  // ~1000 draws each: the small spaces are covered, the large ones mostly distinct.
  EXPECT_EQ(texts[Category::kSingleObject].size(),
            generator.training_prompts(Category::kSingleObject).size());
  EXPECT_EQ(texts[Category::kCounting].size(),
            generator.training_prompts(Category::kCounting).size());
  EXPECT_GT(texts[Category::kPosition].size(), 500u);
  EXPECT_GT(texts[Category::kText].size(), 900u);
}

TEST(PromptGenerator, FollowsCategoryWeights) {
  TaskOptions options;
  options.weights = CategoryWeights{1.0, 0.0, 0.0, 0.0, 3.0};
  const PromptGenerator generator(options);
  int text = 0;
  const int n = 4000;
  for (uint64_t seed = 0; seed < n; ++seed) {
    const Prompt p = generator.sample(seed);
    ASSERT_TRUE(p.category == Category::kSingleObject || p.category == Category::kText);
    text += p.category == Category::kText;
  }
  EXPECT_NEAR(static_cast<double>(text) / n, 0.75, 0.03);
}

TEST(PromptGenerator, RespectsCountAndDigitOptions) {
  TaskOptions options;
  options.max_count = 3;
  options.min_digits = 3;
  options.max_digits = 3;
  const PromptGenerator generator(options);
  for (uint64_t seed = 0; seed < 3000; ++seed) {
    const Prompt p = generator.sample(seed);
    if (p.category == Category::kCounting) {
      ASSERT_LE(p.objects[0].count, 3);
    }
    if (p.category == Category::kText) {
      ASSERT_EQ(p.digits.size(), 3u);
      ASSERT_NE(p.digits[0], '0');
    }
  }
}

TEST(PromptGenerator, SplitsEachPromptSpaceExactly) {
  const PromptGenerator generator;
  const std::map<Category, size_t> space = {{Category::kSingleObject, 12},
                                            {Category::kTwoObject, 132},
                                            {Category::kCounting, 36},
                                            {Category::kPosition, 1056},
                                            {Category::kText, 9990}};
  for (Category category : kCategories) {
    const auto& train = generator.training_prompts(category);
    const auto& held = generator.held_out_prompts(category);
    EXPECT_EQ(train.size() + held.size(), space.at(category)) << name(category);
    EXPECT_FALSE(held.empty()) << name(category);
    std::set<std::string> texts;
    for (const Prompt& p : train) {
      EXPECT_FALSE(generator.is_held_out(p)) << p.text();
      texts.insert(p.text());
    }
    for (const Prompt& p : held) {
      EXPECT_TRUE(generator.is_held_out(p)) << p.text();
      texts.insert(p.text());
    }
    EXPECT_EQ(texts.size(), space.at(category)) << name(category);
    // Roughly the configured share of meanings is held out (a few more for tiny spaces: ceil).
    const double share = static_cast<double>(held.size()) / space.at(category);
    EXPECT_GE(share, 0.1) << name(category);
    EXPECT_LE(share, 0.2) << name(category);
  }
}

TEST(PromptGenerator, HoldsOutMeaningsNotJustTexts) {
  const PromptGenerator generator;
  for (const Prompt& p : generator.held_out_prompts(Category::kTwoObject)) {
    Prompt swapped = p;
    std::swap(swapped.objects[0], swapped.objects[1]);
    EXPECT_TRUE(generator.is_held_out(swapped)) << p.text();
  }
  int mirrored_checked = 0;
  for (Category category : {Category::kPosition}) {
    for (const auto* pool :
         {&generator.training_prompts(category), &generator.held_out_prompts(category)}) {
      for (const Prompt& p : *pool) {
        if (p.objects[0].count != 1) continue;
        ASSERT_EQ(generator.is_held_out(p), generator.is_held_out(mirrored(p))) << p.text();
        ++mirrored_checked;
      }
    }
  }
  EXPECT_EQ(mirrored_checked, 528);
}

TEST(ValidationPrompts, DisjointFromTwentyThousandTrainingSamples) {
  const TaskOptions options;
  const PromptGenerator generator(options);
  std::set<std::string> validation;
  for (const Prompt& p : validation_prompts(options, 500)) {
    validation.insert(p.text());
  }
  for (uint64_t seed = 0; seed < 20000; ++seed) {
    const Prompt p = generator.sample(seed);
    ASSERT_EQ(validation.count(p.text()), 0u) << p.text() << " (seed " << seed << ")";
    ASSERT_FALSE(generator.is_held_out(p)) << p.text();
  }
}

TEST(ValidationPrompts, BalancedFixedAndPrefixStable) {
  const TaskOptions options;
  const PromptGenerator generator(options);
  const std::vector<Prompt> a = validation_prompts(options, 100);
  const std::vector<Prompt> b = validation_prompts(options, 100);
  const std::vector<Prompt> prefix = validation_prompts(options, 37);
  ASSERT_EQ(a.size(), 100u);
  EXPECT_EQ(a, b);
  EXPECT_EQ(prefix, std::vector<Prompt>(a.begin(), a.begin() + 37));
  std::map<Category, int> per_category;
  std::set<std::string> distinct;
  for (const Prompt& p : a) {
    ++per_category[p.category];
    distinct.insert(p.text());
    EXPECT_TRUE(generator.is_held_out(p)) << p.text();
  }
  for (Category category : kCategories) {
    EXPECT_EQ(per_category[category], 20) << name(category);
  }
  // Small spaces repeat: single_object holds out 2 prompts, two_object 18 (9 pairs, both
  // orders), counting 5; position and text have hundreds.
  EXPECT_EQ(distinct.size(), 2u + 18u + 5u + 20u + 20u);
}

TEST(ValidationPrompts, SkipsDisabledCategories) {
  TaskOptions options;
  options.weights.text = 0.0;
  options.weights.counting = 0.0;
  const std::vector<Prompt> prompts = validation_prompts(options, 30);
  std::map<Category, int> per_category;
  for (const Prompt& p : prompts) {
    ++per_category[p.category];
  }
  EXPECT_EQ(per_category[Category::kSingleObject], 10);
  EXPECT_EQ(per_category[Category::kTwoObject], 10);
  EXPECT_EQ(per_category[Category::kPosition], 10);
  EXPECT_EQ(per_category.count(Category::kText), 0u);
  EXPECT_EQ(per_category.count(Category::kCounting), 0u);
  EXPECT_TRUE(validation_prompts(options, 0).empty());
  EXPECT_THROW(validation_prompts(options, -1), TaskError);
}

TEST(PromptGenerator, RejectsInvalidOptions) {
  TaskOptions options;
  options.image_size = 8;
  EXPECT_THROW(PromptGenerator{options}, TaskError);
}

}  // namespace
}  // namespace spotlight::task
