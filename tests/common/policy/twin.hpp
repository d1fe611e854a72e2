#pragma once
// Test support: the built-in MMDiT of a preset and its TorchScript twin with the same weights —
// tools/byom/mmdit.py exported by tools/byom/export_mmdit.py (Debian's python3-torch) — with the
// native text encoder's output for some prompts written as a prompt file and its embeddings, so
// both policies compute the same function on the same prompts. Used by the policy test and by
// torchscript_bench (the cost of the TorchScript path on one architecture).

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/policy/policy.hpp"

namespace spotlight::testing {

// Debian's python3 (python3-torch is installed for it, not for a python3 earlier in PATH).
std::filesystem::path python();
// $SPOTLIGHT_SOURCE_DIR/<relative>, else <relative> in the source tree this was built from.
std::filesystem::path source_path(const std::string& relative);
// Runs `args` under python(); throws std::runtime_error with the log's tail unless it exits 0.
void run_python(const std::vector<std::string>& args, const std::filesystem::path& log);

struct Twin {
  std::unique_ptr<policy::Policy> native;    // model.kind native
  std::unique_ptr<policy::Policy> scripted;  // model.kind torchscript, same weights
  std::vector<task::Prompt> prompts;         // embedded prompts, for `native`
  std::vector<task::Prompt> free_prompts;    // the same texts as free text, for `scripted`
  std::filesystem::path module, prompts_file, embeddings_file;
};

// Builds both in `dir` (created) for `count` validation prompts of the embedded task.
// `scripted_options` is applied on top of what the twin needs (trainable, reward_input ...).
Twin make_twin(const std::string& preset, const std::filesystem::path& dir, int count,
               policy::PolicyOptions scripted_options = {});

}  // namespace spotlight::testing
