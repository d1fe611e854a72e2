#pragma once
// What a policy is made of, as configuration: no LibTorch here, so services that only read the
// run's configuration (the planner) need not load it.

#include <cstdint>
#include <string>
#include <vector>

namespace spotlight::policy {

struct PolicyOptions {
  std::string preset = "tiny";    // native: model size preset (model::mmdit_preset)
  std::string device = "cpu";     // "cpu", "cuda", "cuda:1", ...
  std::string dtype = "float32";  // "float32" or "bfloat16"
  uint64_t init_seed = 0;         // native: weights initialisation
  // "none" or "bfloat16": the DiT forward's matrix products under bf16 autocast, parameters and
  // the sampler in fp32 (model::AutocastGuard). Needs dtype float32 and
  // kind native.
  std::string autocast = "none";
  // "native": the built-in MMDiT of `preset`, conditioned on the embedded task's tokens.
  // "torchscript": a user's transformer exported with torch.jit (`path`), conditioned on the
  // precomputed embeddings of a prompt file (`embeddings_file`); see docs/your-model.md.
  std::string kind = "native";
  std::string path;             // torchscript: the exported module (.pt)
  int64_t latent_channels = 4;  // torchscript: latents are [latent_channels, latent_size,
  int64_t latent_size = 32;     //   latent_size] per sample
  std::string prompts_file;     // torchscript: the prompt file (task::PromptFile) ...
  std::string embeddings_file;  //   ... and its embeddings (PromptEmbeddings)
  // Parameters the trainer trains, by name pattern (fnmatch: `*` also matches dots), e.g.
  // {"*lora*"}; the others are frozen (requires_grad false).
  std::vector<std::string> trainable = {"*"};
  // What reward_inputs() hands to the reward: "images" (RGB in [0, 1], 3 latent channels) or
  // "latents" (the raw final latents; the reward service decodes them).
  std::string reward_input = "images";
};

}  // namespace spotlight::policy
