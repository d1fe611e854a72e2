#pragma once
// A user's transformer exported with torch.jit.script or torch.jit.trace (model.kind
// torchscript), behind the one signature of velocity_model.hpp:
//
//   forward(latents [B, C, H, W], timesteps [B], prompt_embeds [B, L, D], pooled [B, P])
//       -> velocity [B, C, H, W]
//
// C, H, W come from the configuration (model.latent_channels, model.latent_size); L, D, P from
// the prompt embeddings, the module's conditioning (condition() looks the prompts up there).

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/TensorBody.h>

#include "common/policy/prompt_embeddings.hpp"
#include "common/policy/velocity_model.hpp"

namespace spotlight::policy {

struct TorchScriptModelOptions {
  std::filesystem::path path;         // the exported module
  std::vector<int64_t> sample_shape;  // {C, H, W}
  at::TensorOptions tensor_options;   // device and dtype of parameters and activations
  std::shared_ptr<const PromptEmbeddings> embeddings;
};

// Loads the module onto the device and dtype and runs one forward on a batch of one (zeros) to
// check the signature and the output shape. Throws PolicyError naming the file and what failed.
std::unique_ptr<VelocityModel> load_torchscript_model(const TorchScriptModelOptions& options);

}  // namespace spotlight::policy
