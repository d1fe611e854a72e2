#pragma once
// A user's prompts (task.kind prompt_file): a JSON file with a training and a validation split,
//
//   {"format": "spotlight-prompts", "version": 1,
//    "train": ["a photo of a cat", ...], "validation": ["a red bicycle", ...]}
//
// as tools/encode_prompts.py writes it next to the prompts' embeddings (safetensors, read by the
// policy: common/policy/prompt_embeddings.hpp). Every prompt is a kFreeText task::Prompt. The
// planner reads only this file; the trainer and explorers also load the embeddings.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/task/prompt_source.hpp"

namespace spotlight::task {

inline constexpr const char* kPromptFileFormat = "spotlight-prompts";
inline constexpr int kPromptFileVersion = 1;

class PromptFile final : public PromptSource {
 public:
  // Throws TaskError naming the file and the problem: unreadable, not JSON, wrong format or
  // version, a split missing or not a list of non-empty strings, an empty train split.
  static PromptFile load(const std::filesystem::path& path);
  // The same from the file's text; `origin` names it in errors.
  static PromptFile parse(const std::string& json, const std::string& origin);

  // train()[seed % train().size()].
  Prompt sample(uint64_t seed) const override;
  std::vector<Prompt> validation(int n) const override;

  const std::vector<std::string>& train() const { return train_; }
  const std::vector<std::string>& validation_texts() const { return validation_; }

 private:
  std::vector<std::string> train_;
  std::vector<std::string> validation_;
};

}  // namespace spotlight::task
