// A user's prompt file (task.kind prompt_file) and the free-text prompts it yields.
#include "common/task/prompt_file.hpp"

#include <gtest/gtest.h>

#include "common/task/errors.hpp"
#include "common/task/image.hpp"
#include "common/task/options.hpp"
#include "common/task/score.hpp"

namespace spotlight::task {
namespace {

const char* kFile = R"({"format": "spotlight-prompts", "version": 1,
  "train": ["a photo of a cat", "A Red  Bicycle", "the number 42"],
  "validation": ["a lighthouse at dusk"]})";

TEST(PromptFile, SamplesTrainingPromptsVerbatimAndValidatesInOrder) {
  const PromptFile file = PromptFile::parse(kFile, "test");
  EXPECT_EQ(file.train().size(), 3u);
  // Free text is kept as written, even when it reads like an embedded prompt.
  EXPECT_EQ(file.sample(1).text(), "A Red  Bicycle");
  EXPECT_EQ(file.sample(2).category, Category::kFreeText);
  EXPECT_EQ(file.sample(2).text(), "the number 42");
  EXPECT_EQ(file.sample(3 * 1000 + 1), file.sample(1));
  EXPECT_EQ(file.validation(5).size(), 1u);
  EXPECT_EQ(file.validation(5)[0].text(), "a lighthouse at dusk");
  EXPECT_TRUE(file.validation(0).empty());
}

TEST(PromptFile, RejectsMalformedFilesNamingTheProblem) {
  const auto message = [](const std::string& json) {
    try {
      PromptFile::parse(json, "p.json");
    } catch (const TaskError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("{").find("not JSON"), std::string::npos);
  EXPECT_NE(message(R"({"train": []})").find("not a 'spotlight-prompts' file"), std::string::npos);
  EXPECT_NE(
      message(R"({"format": "spotlight-prompts", "version": 2, "train": [], "validation": []})")
          .find("version must be 1"),
      std::string::npos);
  EXPECT_NE(message(R"({"format": "spotlight-prompts", "version": 1, "validation": []})")
                .find("'train' is missing"),
            std::string::npos);
  EXPECT_NE(message(R"({"format": "spotlight-prompts", "version": 1, "train": ["a", ""],
                        "validation": []})")
                .find("'train' [1] must be a non-empty string"),
            std::string::npos);
  EXPECT_NE(message(R"({"format": "spotlight-prompts", "version": 1, "train": [],
                        "validation": ["x"]})")
                .find("'train' is empty"),
            std::string::npos);
  EXPECT_THROW(PromptFile::load("/nonexistent/prompts.json"), TaskError);
}

TEST(FreeTextPrompt, IsValidatedAndRefusedByTheEmbeddedScorer) {
  EXPECT_THROW(free_text_prompt(""), TaskError);
  Prompt p = free_text_prompt("a cat");
  EXPECT_EQ(p.text(), "a cat");
  EXPECT_EQ(name(p.category), "free_text");
  p.digits = "12";
  EXPECT_THROW(validate(p), TaskError);
  try {
    score(free_text_prompt("a cat"), Image::blank(32, 32), TaskOptions{});
    ADD_FAILURE() << "the embedded scorer graded a free-text prompt";
  } catch (const TaskError& e) {
    EXPECT_NE(std::string(e.what()).find("reward.endpoint"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace spotlight::task
