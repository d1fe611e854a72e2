#include "common/task/prompt.hpp"

#include <string>

#include <gtest/gtest.h>

#include "common/task/errors.hpp"
#include "common/task/generator.hpp"
#include "common/task/options.hpp"

namespace spotlight::task {
namespace {

ObjectSpec obj(int count, Colour colour, Shape shape) {
  return ObjectSpec{count, colour, shape};
}

TEST(PromptText, OneExamplePerCategory) {
  EXPECT_EQ(
      (Prompt{Category::kSingleObject, {obj(1, Colour::kGreen, Shape::kDisc)}, {}, {}}).text(),
      "a green disc");
  EXPECT_EQ((Prompt{Category::kTwoObject,
                    {obj(1, Colour::kRed, Shape::kSquare), obj(1, Colour::kBlue, Shape::kDisc)},
                    {},
                    {}})
                .text(),
            "a red square and a blue disc");
  EXPECT_EQ((Prompt{Category::kCounting, {obj(3, Colour::kCyan, Shape::kDisc)}, {}, {}}).text(),
            "three cyan discs");
  EXPECT_EQ((Prompt{Category::kPosition,
                    {obj(2, Colour::kRed, Shape::kSquare), obj(1, Colour::kBlue, Shape::kDisc)},
                    Relation::kLeftOf,
                    {}})
                .text(),
            "two red squares left of a blue disc");
  EXPECT_EQ((Prompt{Category::kText, {}, Relation::kNone, "4821"}).text(), "the number 4821");
}

TEST(PromptParse, InvertsTextForEveryPromptOfTheTask) {
  const PromptGenerator generator;
  int checked = 0;
  for (Category category : kCategories) {
    for (const auto* pool :
         {&generator.training_prompts(category), &generator.held_out_prompts(category)}) {
      for (const Prompt& p : *pool) {
        const std::optional<Prompt> parsed = parse_prompt(p.text());
        ASSERT_TRUE(parsed.has_value()) << p.text();
        ASSERT_EQ(*parsed, p) << p.text();
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 10000);
}

TEST(PromptParse, ToleratesCaseAndSpacing) {
  const std::optional<Prompt> p = parse_prompt("  Two RED squares\tLEFT of  a blue disc ");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->text(), "two red squares left of a blue disc");
}

TEST(PromptParse, RejectsAnythingElse) {
  for (const char* text :
       {"", "a", "a purple disc", "two red square", "a red squares", "one red square",
        "five red squares", "a red square left a blue disc", "a red square and",
        "a red square and a red square", "a red square left of a red square",
        "three red squares left of a blue disc", "a red square left of two blue discs",
        "the number", "the number 12a", "the number 12345", "a red square a blue disc",
        "a red square and a blue disc and a green disc", "number 12"}) {
    EXPECT_FALSE(parse_prompt(text).has_value()) << text;
  }
}

TEST(PromptValidate, NamesTheBadField) {
  auto message = [](const Prompt& p) {
    try {
      validate(p);
    } catch (const TaskError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const ObjectSpec red = obj(1, Colour::kRed, Shape::kSquare);
  const ObjectSpec blue = obj(1, Colour::kBlue, Shape::kDisc);
  EXPECT_NE(message(Prompt{Category::kPosition, {red, blue}, Relation::kNone, {}}).find("relation"),
            std::string::npos);
  EXPECT_NE(message(Prompt{Category::kCounting, {red}, {}, {}}).find("objects[0].count"),
            std::string::npos);
  EXPECT_NE(message(Prompt{Category::kTwoObject, {red, red}, {}, {}}).find("differ"),
            std::string::npos);
  EXPECT_NE(message(Prompt{Category::kText, {}, {}, "12a"}).find("digits"), std::string::npos);
  EXPECT_NE(message(Prompt{Category::kSingleObject, {red}, {}, "1"}).find("digits"),
            std::string::npos);
  EXPECT_NE(message(Prompt{Category::kSingleObject, {red, blue}, {}, {}}).find("objects"),
            std::string::npos);
  EXPECT_EQ(message(Prompt{Category::kSingleObject, {red}, {}, {}}), "no error");
  EXPECT_THROW((Prompt{Category::kText, {}, {}, ""}).text(), TaskError);
}

TEST(TaskOptionsValidate, NamesTheBadField) {
  auto message = [](const TaskOptions& o) {
    try {
      o.validate();
    } catch (const TaskError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(TaskOptions{}), "no error");
  TaskOptions o;
  o.image_size = 16;
  EXPECT_NE(message(o).find("image_size"), std::string::npos);
  o = {};
  o.max_count = 5;
  EXPECT_NE(message(o).find("max_count"), std::string::npos);
  o = {};
  o.min_digits = 3;
  o.max_digits = 2;
  EXPECT_NE(message(o).find("max_digits"), std::string::npos);
  o = {};
  o.weights.counting = -1.0;
  EXPECT_NE(message(o).find("weights.counting"), std::string::npos);
  o = {};
  o.weights = CategoryWeights{0, 0, 0, 0, 0};
  EXPECT_NE(message(o).find("weights"), std::string::npos);
  o = {};
  o.held_out_fraction = 0.0;
  EXPECT_NE(message(o).find("held_out_fraction"), std::string::npos);
}

}  // namespace
}  // namespace spotlight::task
