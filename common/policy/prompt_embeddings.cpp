#include "common/policy/prompt_embeddings.hpp"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "common/model/safetensors.hpp"
#include "common/policy/errors.hpp"

namespace spotlight::policy {
namespace {

using Json = nlohmann::json;

}  // namespace

PromptEmbeddings PromptEmbeddings::load(const std::filesystem::path& file,
                                        const task::PromptFile& prompts) {
  const std::string origin = "prompt embeddings " + file.string();
  model::TensorFile tensors;
  try {
    tensors = model::load_safetensors(file);
  } catch (const std::exception& e) {
    throw PolicyError(origin + ": " + e.what());
  }
  const auto format = tensors.metadata.find("format");
  if (format == tensors.metadata.end() || format->second != kEmbeddingsFormat) {
    throw PolicyError(origin + ": metadata 'format' is not '" + kEmbeddingsFormat +
                      "' (tools/encode_prompts.py writes it)");
  }
  const Json expected{{"train", prompts.train()}, {"validation", prompts.validation_texts()}};
  Json recorded;
  try {
    recorded = Json::parse(tensors.metadata.at("prompts"));
  } catch (const std::exception&) {
    throw PolicyError(origin + ": metadata 'prompts' is missing or not JSON");
  }
  if (recorded != expected) {
    throw PolicyError(origin + ": encoded for other prompts than the prompt file " +
                      "(re-run tools/encode_prompts.py on it)");
  }
  const auto tensor = [&](const std::string& name, int64_t rank, int64_t rows) {
    const auto it = tensors.tensors.find(name);
    if (it == tensors.tensors.end()) throw PolicyError(origin + ": tensor '" + name + "' missing");
    if (it->second.dim() != rank || it->second.size(0) != rows) {
      throw PolicyError(origin + ": tensor '" + name + "' must be of rank " + std::to_string(rank) +
                        " with " + std::to_string(rows) + " rows");
    }
    return it->second.to(torch::kFloat);
  };
  const auto n_train = static_cast<int64_t>(prompts.train().size());
  const auto n_validation = static_cast<int64_t>(prompts.validation_texts().size());
  auto train_embeds = tensor("train.prompt_embeds", 3, n_train);
  auto train_pooled = tensor("train.pooled", 2, n_train);
  auto validation_embeds = tensor("validation.prompt_embeds", 3, n_validation);
  auto validation_pooled = tensor("validation.pooled", 2, n_validation);
  if (validation_embeds.size(1) != train_embeds.size(1) ||
      validation_embeds.size(2) != train_embeds.size(2) ||
      validation_pooled.size(1) != train_pooled.size(1)) {
    throw PolicyError(origin + ": the train and validation embeddings differ in shape");
  }
  const bool finite = torch::isfinite(train_embeds).all().item<bool>() &&
                      torch::isfinite(train_pooled).all().item<bool>() &&
                      torch::isfinite(validation_embeds).all().item<bool>() &&
                      torch::isfinite(validation_pooled).all().item<bool>();
  if (!finite) throw PolicyError(origin + ": embeddings hold NaN or Inf");
  PromptEmbeddings out;
  out.embeds_ = torch::cat({train_embeds, validation_embeds}, 0);
  out.pooled_ = torch::cat({train_pooled, validation_pooled}, 0);
  int64_t row = 0;
  for (const auto& text : prompts.train())
    out.rows_.try_emplace(text, row++);
  for (const auto& text : prompts.validation_texts())
    out.rows_.try_emplace(text, row++);
  return out;
}

sampler::Conditioning PromptEmbeddings::lookup(const std::vector<task::Prompt>& prompts,
                                               const at::TensorOptions& options) const {
  std::vector<int64_t> rows;
  rows.reserve(prompts.size());
  for (const auto& prompt : prompts) {
    const std::string text = prompt.text();
    const auto it = rows_.find(text);
    if (it == rows_.end()) {
      throw PolicyError("prompt '" + text + "' has no embedding in the prompt file's embeddings");
    }
    rows.push_back(it->second);
  }
  const auto index = torch::tensor(rows, torch::kLong);
  return sampler::Conditioning{embeds_.index_select(0, index).to(options),
                               pooled_.index_select(0, index).to(options)};
}

}  // namespace spotlight::policy
