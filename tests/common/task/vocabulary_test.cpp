#include "common/task/vocabulary.hpp"

#include <set>

#include <gtest/gtest.h>

#include "common/task/errors.hpp"
#include "common/task/generator.hpp"

namespace spotlight::task {
namespace {

TEST(Vocabulary, FixedSpecialIdsAndUniqueWords) {
  const Vocabulary vocab;
  EXPECT_EQ(vocab.word(Vocabulary::kPadId), "<pad>");
  EXPECT_EQ(vocab.word(Vocabulary::kUnkId), "<unk>");
  std::set<std::string> words;
  for (int64_t id = 0; id < vocab.size(); ++id) {
    EXPECT_EQ(vocab.id(vocab.word(id)), id) << vocab.word(id);
    words.insert(vocab.word(id));
  }
  EXPECT_EQ(static_cast<int64_t>(words.size()), vocab.size());
  for (const char* w :
       {"a",    "the",    "number",  "and",  "left",  "right", "of",   "above",  "below",
        "one",  "two",    "three",   "four", "red",   "green", "blue", "yellow", "magenta",
        "cyan", "square", "squares", "disc", "discs", "0",     "5",    "9"}) {
    EXPECT_NE(vocab.id(w), Vocabulary::kUnkId) << w;
  }
}

TEST(Vocabulary, EveryTaskPromptRoundTripsWithoutUnknownsWithinMaxTokens) {
  const Vocabulary vocab;
  const PromptGenerator generator;
  for (Category category : kCategories) {
    for (const auto* pool :
         {&generator.training_prompts(category), &generator.held_out_prompts(category)}) {
      for (const Prompt& p : *pool) {
        const std::vector<int64_t> ids = vocab.encode(p.text(), Vocabulary::kMaxPromptTokens + 1);
        ASSERT_EQ(ids.back(), Vocabulary::kPadId) << p.text() << " exceeds kMaxPromptTokens";
        for (int64_t id : ids) {
          ASSERT_NE(id, Vocabulary::kUnkId) << p.text();
        }
        ASSERT_EQ(vocab.decode(ids), p.text());
      }
    }
  }
}

TEST(Vocabulary, SplitsDigitStringsIntoDigitTokens) {
  const Vocabulary vocab;
  const std::vector<int64_t> ids = vocab.encode("the number 4821", 8);
  const std::vector<int64_t> expected = {vocab.id("the"),    vocab.id("number"), vocab.id("4"),
                                         vocab.id("8"),      vocab.id("2"),      vocab.id("1"),
                                         Vocabulary::kPadId, Vocabulary::kPadId};
  EXPECT_EQ(ids, expected);
}

TEST(Vocabulary, MapsUnknownWordsToUnkAndIgnoresCase) {
  const Vocabulary vocab;
  const std::vector<int64_t> ids = vocab.encode("A Purple DISC", 4);
  const std::vector<int64_t> expected = {vocab.id("a"), Vocabulary::kUnkId, vocab.id("disc"),
                                         Vocabulary::kPadId};
  EXPECT_EQ(ids, expected);
  EXPECT_EQ(vocab.decode(ids), "a <unk> disc");
  EXPECT_EQ(vocab.id("purple"), Vocabulary::kUnkId);
  EXPECT_EQ(vocab.word(-1), "<unk>");
  EXPECT_EQ(vocab.word(vocab.size()), "<unk>");
}

TEST(Vocabulary, PadsAndTruncatesToMaxLen) {
  const Vocabulary vocab;
  EXPECT_EQ(vocab.encode("", 3), (std::vector<int64_t>{0, 0, 0}));
  const std::vector<int64_t> cut = vocab.encode("two red squares left of a blue disc", 2);
  EXPECT_EQ(cut, (std::vector<int64_t>{vocab.id("two"), vocab.id("red")}));
  const std::vector<int64_t> digits = vocab.encode("the number 4821", 4);
  EXPECT_EQ(vocab.decode(digits), "the number 48");
  EXPECT_THROW(vocab.encode("a red disc", 0), TaskError);
}

}  // namespace
}  // namespace spotlight::task
