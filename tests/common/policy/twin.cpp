#include "tests/common/policy/twin.hpp"

#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "common/model/safetensors.hpp"
#include "common/policy/prompt_embeddings.hpp"
#include "common/task/generator.hpp"
#include "common/task/prompt_file.hpp"
#include "tests/support/process.hpp"

namespace spotlight::testing {

std::filesystem::path python() {
  return std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

std::filesystem::path source_path(const std::string& relative) {
  const char* root = std::getenv("SPOTLIGHT_SOURCE_DIR");
  return std::filesystem::path(root != nullptr ? root : SPOTLIGHT_DEFAULT_SOURCE_DIR) / relative;
}

void run_python(const std::vector<std::string>& args, const std::filesystem::path& log) {
  Process p(python(), args, log);
  const auto status = p.wait(std::chrono::minutes(5));
  if (status != std::optional<int>(0)) {
    throw std::runtime_error("python " + (args.empty() ? std::string() : args[0]) + " failed (" +
                             (status ? std::to_string(*status) : std::string("timeout")) + "):\n" +
                             p.log_tail());
  }
}

Twin make_twin(const std::string& preset, const std::filesystem::path& dir, int count,
               policy::PolicyOptions scripted_options) {
  std::filesystem::create_directories(dir);
  Twin twin;
  policy::PolicyOptions native_options;
  native_options.preset = preset;
  twin.native = std::make_unique<policy::Policy>(native_options);
  {
    // A stand-in for pretrained weights: the fresh MMDiT's adaLN-zero and final layers are zero,
    // so its velocity (and every gradient) would be zero.
    torch::NoGradGuard no_grad;
    torch::manual_seed(11);
    for (auto& [name, p] : twin.native->named_parameters())
      p.add_(torch::randn(p.sizes()) * 0.05);
  }
  const auto& m = twin.native->model_options();
  twin.prompts = task::validation_prompts(twin.native->task_options(), count);
  std::vector<std::string> texts;
  for (const auto& p : twin.prompts) {
    texts.push_back(p.text());
    twin.free_prompts.push_back(task::free_text_prompt(p.text()));
  }

  // The native text encoder's output is the twin's precomputed prompt embeddings.
  torch::NoGradGuard no_grad;
  const auto condition = twin.native->condition(twin.prompts);
  model::TensorFile embeddings;
  embeddings.tensors["train.prompt_embeds"] = condition.text.contiguous();
  embeddings.tensors["train.pooled"] = condition.pooled.contiguous();
  embeddings.tensors["validation.prompt_embeds"] = condition.text.narrow(0, 0, 0).contiguous();
  embeddings.tensors["validation.pooled"] = condition.pooled.narrow(0, 0, 0).contiguous();
  embeddings.metadata["format"] = policy::kEmbeddingsFormat;
  const nlohmann::json splits{{"train", texts}, {"validation", std::vector<std::string>{}}};
  embeddings.metadata["prompts"] = splits.dump();
  twin.embeddings_file = dir / "embeddings.safetensors";
  model::save_safetensors(twin.embeddings_file, embeddings);
  twin.prompts_file = dir / "prompts.json";
  nlohmann::json file = splits;
  file["format"] = task::kPromptFileFormat;
  file["version"] = task::kPromptFileVersion;
  std::ofstream(twin.prompts_file) << file.dump();

  const auto weights = dir / "native.safetensors";
  model::save_safetensors(weights, twin.native->state());
  twin.module = dir / "twin.pt";
  run_python(
      {source_path("tools/byom/export_mmdit.py").string(), "--out", twin.module.string(),
       "--weights", weights.string(), "--hidden", std::to_string(m.hidden()), "--depth",
       std::to_string(m.depth()), "--heads", std::to_string(m.heads()), "--mlp-ratio",
       std::to_string(m.mlp_ratio()), "--channels", std::to_string(m.channels()), "--latent-size",
       std::to_string(m.image_size()), "--patch", std::to_string(m.patch())},
      dir / "export.log");

  scripted_options.kind = "torchscript";
  scripted_options.path = twin.module.string();
  scripted_options.latent_channels = m.channels();
  scripted_options.latent_size = m.image_size();
  scripted_options.prompts_file = twin.prompts_file.string();
  scripted_options.embeddings_file = twin.embeddings_file.string();
  twin.scripted = std::make_unique<policy::Policy>(scripted_options);
  return twin;
}

}  // namespace spotlight::testing
