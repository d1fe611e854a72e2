#pragma once
// Precomputed prompt embeddings of a prompt file (task.kind prompt_file), as
// tools/encode_prompts.py writes them: a safetensors file with, per split s in {train,
// validation}, `s.prompt_embeds` [N_s, L, D] and `s.pooled` [N_s, P] (row i is prompt i of the
// split), and metadata {"format": "spotlight-prompt-embeddings", "prompts": JSON of the prompt
// file's splits}, which must equal the prompt file's (the pair was encoded together).

#include <cstdint>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/core/Tensor.h>

#include "common/sampler/sampler.hpp"
#include "common/task/prompt.hpp"
#include "common/task/prompt_file.hpp"

namespace spotlight::policy {

inline constexpr const char* kEmbeddingsFormat = "spotlight-prompt-embeddings";

class PromptEmbeddings {
 public:
  // Throws PolicyError naming the file and the problem (unreadable, not safetensors, a tensor
  // missing or of the wrong rank, row counts or dimensions that disagree, prompts that differ
  // from `prompts`).
  static PromptEmbeddings load(const std::filesystem::path& file, const task::PromptFile& prompts);

  bool contains(const std::string& text) const { return rows_.count(text) != 0; }
  // The rows of the prompts' texts, stacked: text [B, L, D], pooled [B, P], converted to
  // `options`. Throws PolicyError naming a prompt that has no embedding.
  sampler::Conditioning lookup(const std::vector<task::Prompt>& prompts,
                               const at::TensorOptions& options) const;

  int64_t text_length() const { return embeds_.size(1); }
  int64_t text_dim() const { return embeds_.size(2); }
  int64_t pooled_dim() const { return pooled_.size(1); }

 private:
  at::Tensor embeds_;  // [N, L, D]: the train rows, then the validation rows (CPU, float32)
  at::Tensor pooled_;  // [N, P]
  std::unordered_map<std::string, int64_t> rows_;
};

}  // namespace spotlight::policy
