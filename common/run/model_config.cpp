#include "common/run/model_config.hpp"

#include <algorithm>
#include <string>

#include "common/config/error.hpp"
#include "common/task/errors.hpp"
#include "common/task/generator.hpp"
#include "common/task/prompt_file.hpp"
#include "common/task/task_config.hpp"

namespace spotlight::run {

using config::Entry;

namespace {

// cpu, cuda or cuda:<index> (whether the device exists is checked where tensors live:
// policy::check_device).
bool valid_device(const config::Value& value) {
  const auto& d = std::get<std::string>(value);
  if (d == "cpu" || d == "cuda") return true;
  if (d.rfind("cuda:", 0) != 0 || d.size() == 5 || d.size() > 9) return false;
  return std::all_of(d.begin() + 5, d.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

const config::Schema& model_schema() {
  static const config::Schema schema{
      Entry::string("model.preset", "tiny", "Model size preset.")
          .one_of({"micro", "mini", "tiny", "small", "base", "qwen-image-like"}),
      Entry::string("model.device", "cpu", "Device of every tensor: cpu, cuda, cuda:N.")
          .check("must be cpu, cuda or cuda:<index>", valid_device),
      Entry::string("model.dtype", "float32", "Parameter and activation dtype.")
          .one_of({"float32", "bfloat16"}),
      Entry::string("model.autocast", "none",
                    "bfloat16: the DiT forward's matrix products in bf16 under autocast, the "
                    "parameters, sampler and log-probabilities in fp32 (needs model.dtype "
                    "float32); none: all in model.dtype.")
          .one_of({"none", "bfloat16"}),
      Entry::integer("model.init_seed", 0, "Seed of the weight initialisation.").at_least(0),
      Entry::string("model.base", "",
                    "Base checkpoint (safetensors) to start RL from; empty: fresh weights "
                    "(torchscript: the module's own)."),
      Entry::string("model.kind", "native",
                    "native: the built-in MMDiT of model.preset; torchscript: a user's transformer "
                    "exported with torch.jit (model.path; docs/your-model.md).")
          .one_of(config::names(kModelKinds)),
      Entry::string("model.path", "",
                    "torchscript: the exported module, forward(latents [B,C,H,W], timesteps [B], "
                    "prompt_embeds [B,L,D], pooled [B,P]) -> velocity [B,C,H,W]."),
      Entry::integer("model.latent_channels", 4, "torchscript: latent channels C.").range(1, 4096),
      Entry::integer("model.latent_size", 32, "torchscript: latent height and width H = W.")
          .range(1, 4096),
      Entry::string("task.kind", "embedded",
                    "embedded: the built-in GenEval-like task; prompt_file: a user's prompts "
                    "(task.prompts_file) with precomputed embeddings (task.embeddings_file).")
          .one_of(config::names(kTaskKinds)),
      Entry::string("task.prompts_file", "",
                    "prompt_file: prompts with train and validation splits "
                    "(tools/encode_prompts.py writes it)."),
      Entry::string("task.embeddings_file", "",
                    "prompt_file: the prompts' prompt_embeds and pooled (safetensors; "
                    "tools/encode_prompts.py writes it)."),
  };
  return schema;
}

void check_model_config(const config::Config& c) {
  const auto fail = [&](const std::string& key, const std::string& what) {
    throw config::ConfigError(key, "config: '" + key + "' " + what + " (" + c.origin(key) + ")");
  };
  const bool torchscript =
      config::get_choice(c, "model.kind", kModelKinds) == ModelKind::kTorchscript;
  const bool prompt_file = config::get_choice(c, "task.kind", kTaskKinds) == TaskKind::kPromptFile;
  if (torchscript && c.get_string("model.path").empty()) {
    fail("model.path", "must name the exported module when model.kind is torchscript");
  }
  if (torchscript && c.get_string("model.autocast") != "none") {
    fail("model.autocast", "applies to the built-in MMDiT only, not to model.kind torchscript");
  }
  if (torchscript != prompt_file) {
    fail("task.kind", torchscript ? "must be prompt_file when model.kind is torchscript (a "
                                    "TorchScript module is conditioned on precomputed embeddings)"
                                  : "prompt_file needs model.kind torchscript (the built-in "
                                    "MMDiT encodes the embedded task's words itself)");
  }
  if (prompt_file) {
    for (const char* key : {"task.prompts_file", "task.embeddings_file"}) {
      if (c.get_string(key).empty()) fail(key, "must name a file when task.kind is prompt_file");
    }
    if (c.get_string("reward.endpoint").empty()) {
      fail("reward.endpoint",
           "must name a reward service when task.kind is prompt_file (the embedded scorer "
           "cannot grade a user's prompts)");
    }
    if (c.get_int("explorer.sp.size") > 1) {
      fail("explorer.sp.size", "must be 1 with model.kind torchscript (no SP runtime for it)");
    }
  }
  if (c.get_string("reward.input") == "latents" && c.get_string("reward.endpoint").empty()) {
    fail("reward.input", "latents needs a reward service (reward.endpoint) that decodes them");
  }
}

std::unique_ptr<task::PromptSource> prompt_source(const config::Config& c) {
  check_model_config(c);
  if (config::get_choice(c, "task.kind", kTaskKinds) == TaskKind::kPromptFile) {
    try {
      return std::make_unique<task::PromptFile>(
          task::PromptFile::load(c.get_string("task.prompts_file")));
    } catch (const task::TaskError& e) {
      throw config::ConfigError("task.prompts_file", std::string("config: ") + e.what());
    }
  }
  return std::make_unique<task::PromptGenerator>(task::task_options(c));
}

policy::PolicyOptions policy_options(const config::Config& c) {
  check_model_config(c);
  policy::PolicyOptions o;
  o.kind = c.get_string("model.kind");
  o.path = c.get_string("model.path");
  o.latent_channels = c.get_int("model.latent_channels");
  o.latent_size = c.get_int("model.latent_size");
  o.prompts_file = c.get_string("task.prompts_file");
  o.embeddings_file = c.get_string("task.embeddings_file");
  o.trainable = c.get_string_list("trainer.trainable");
  o.reward_input = c.get_string("reward.input");
  o.preset = c.get_string("model.preset");
  o.device = c.get_string("model.device");
  o.dtype = c.get_string("model.dtype");
  o.autocast = c.get_string("model.autocast");
  if (o.autocast != "none" && o.dtype != "float32") {
    throw config::ConfigError("model.autocast", "config: 'model.autocast' " + o.autocast +
                                                    " needs model.dtype float32, got " + o.dtype +
                                                    " (in " + c.origin("model.dtype") + ")");
  }
  o.init_seed = c.get<uint64_t>("model.init_seed");
  return o;
}

}  // namespace spotlight::run
