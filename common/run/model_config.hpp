#pragma once
// The run's model section: model.* and task.kind with its files (which model is trained, on which
// prompts), read into policy::PolicyOptions and the run's PromptSource.

#include <memory>

#include "common/config/choice.hpp"
#include "common/config/config.hpp"
#include "common/config/schema.hpp"
#include "common/policy/policy_options.hpp"
#include "common/task/prompt_source.hpp"

namespace spotlight::run {

// model.kind: the built-in MMDiT of model.preset, or a user's TorchScript transformer.
enum class ModelKind { kNative, kTorchscript };
inline constexpr config::Choice<ModelKind> kModelKinds[] = {
    {"native", ModelKind::kNative},
    {"torchscript", ModelKind::kTorchscript},
};

// task.kind: the embedded GenEval-like task, or a user's prompt file with embeddings.
enum class TaskKind { kEmbedded, kPromptFile };
inline constexpr config::Choice<TaskKind> kTaskKinds[] = {
    {"embedded", TaskKind::kEmbedded},
    {"prompt_file", TaskKind::kPromptFile},
};

// model.*, task.kind, task.prompts_file, task.embeddings_file.
const config::Schema& model_schema();

// Throws config::ConfigError naming the key when the model, task and reward keys do not fit
// together: model.kind torchscript <=> task.kind prompt_file (with model.path, both task files and
// reward.endpoint), reward.input latents needs reward.endpoint, no SP with torchscript.
void check_model_config(const config::Config& config);
// The model of the run (check_model_config first).
policy::PolicyOptions policy_options(const config::Config& config);
// Where the run's prompts come from: the embedded generator (task.kind embedded) or the prompt
// file (prompt_file; throws config::ConfigError naming task.prompts_file when it is unusable).
std::unique_ptr<task::PromptSource> prompt_source(const config::Config& config);

}  // namespace spotlight::run
