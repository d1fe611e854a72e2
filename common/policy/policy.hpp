#pragma once
// A policy is what the trainer trains and the explorers sample: a velocity model on a configured
// device and dtype, and how prompts condition it. Two kinds (PolicyOptions::kind):
//   native       the built-in MMDiT with the embedded task's vocabulary and image format
//   torchscript  a user's exported transformer conditioned on precomputed prompt embeddings
// Both sample with the same Philox noise and steps (common/sampler) and train with the same loss;
// checkpoints and published weights are safetensors of the module's own parameter and buffer
// names. It samples seeded batches in fixed-size chunks.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "common/config/config.hpp"
#include "common/model/mmdit.hpp"
#include "common/model/safetensors.hpp"
#include "common/policy/errors.hpp"
#include "common/policy/policy_options.hpp"
#include "common/policy/velocity_model.hpp"
#include "common/sampler/sampler.hpp"
#include "common/sampler/stepper.hpp"
#include "common/task/image.hpp"
#include "common/task/options.hpp"
#include "common/task/prompt.hpp"

namespace spotlight::policy {

// Why tensors cannot be placed on `device` ("cpu", "cuda", "cuda:N") in this process: a CUDA
// device this LibTorch build or this machine does not have. nullopt when they can.
std::optional<std::string> device_problem(const std::string& device);
// The same for the configuration key model.device: throws config::ConfigError naming the key.
// Every process that places tensors calls it at start (trainer, explorer).
void check_device(const config::Config& config);

// Task options matching a model preset (image size).
task::TaskOptions task_options_for(const model::MMDiTOptions& model, task::TaskOptions base = {});

class Policy {
 public:
  // Throws PolicyError (torchscript: module, prompt file or embeddings unusable; a trainable
  // pattern that matches no parameter), std::invalid_argument for a bad dtype or kind.
  explicit Policy(const PolicyOptions& options, const task::TaskOptions& task = {});
  ~Policy();
  Policy(Policy&&) noexcept;
  Policy& operator=(Policy&&) noexcept;

  const PolicyOptions& options() const { return options_; }
  bool is_native() const { return options_.kind == "native"; }
  const task::TaskOptions& task_options() const { return task_; }
  at::TensorOptions tensor_options() const;
  std::vector<int64_t> sample_shape() const { return velocity_model_->sample_shape(); }

  // --- any kind -------------------------------------------------------------------------------
  // The conditioning of `prompts` (records gradients in grad mode for the MMDiT's text encoder).
  sampler::Conditioning condition(const std::vector<task::Prompt>& prompts);
  // Whether condition() can take `prompt` (torchscript: it has an embedding).
  bool accepts(const task::Prompt& prompt) const;
  at::Tensor velocity(const at::Tensor& x, const at::Tensor& t,
                      const sampler::Conditioning& condition);
  void set_training(bool training);
  // A sampler over `prompts` and `seeds` from step 0, or from `start`.
  sampler::Stepper stepper(const std::vector<task::Prompt>& prompts,
                           const std::vector<uint64_t>& seeds, const sampler::SamplerOptions& o,
                           const std::optional<sampler::ResumePoint>& start = std::nullopt);
  // Samples prompts[i] with seeds[i] in chunks of `chunk` samples (the batch composition is a
  // function of the inputs alone, which keeps results bit-reproducible).
  std::vector<sampler::Trajectory> sample(const std::vector<task::Prompt>& prompts,
                                          const std::vector<uint64_t>& seeds,
                                          const sampler::SamplerOptions& options, int chunk);
  // What the reward scores for final latents [B, C, H, W]: task images (reward_input images:
  // C must be 3) or the raw latents, channels-last (reward_input latents).
  std::vector<task::Image> reward_inputs(const at::Tensor& latents) const;
  // reward_inputs of sampled chunks' final latents, in sample order.
  std::vector<task::Image> final_reward_inputs(
      const std::vector<sampler::Trajectory>& chunks) const;

  // Every parameter and buffer by name; the trained parameters (options.trainable).
  NamedTensors named_parameters() const;
  std::vector<at::Tensor> trainable_parameters() const { return trainable_; }
  std::vector<std::string> trainable_names() const { return trainable_names_; }
  // Parameters and buffers as a tensor file (CPU) and back. load_state throws
  // model::CheckpointError naming a missing tensor or a shape mismatch; extra tensors are ignored.
  model::TensorFile state() const;
  void load_state(const model::TensorFile& file);
  // Weights as safetensors bytes (what the weight store publishes) and back.
  std::string weights_bytes() const;
  void load_weights_bytes(const std::string& bytes);
  void copy_weights_from(const Policy& other);

  // --- native only (PolicyError otherwise) ---------------------------------------------------
  model::MMDiT& model();
  const model::MMDiTOptions& model_options() const;
  at::Tensor tokens(const std::vector<task::Prompt>& prompts) const;  // [B, text_len] on device
  at::Tensor images_to_latents(const std::vector<task::Image>& images) const;  // [-1, 1]
  std::vector<task::Image> latents_to_images(const at::Tensor& latents) const;
  // The final images of sampled chunks, in sample order.
  std::vector<task::Image> final_images(const std::vector<sampler::Trajectory>& chunks) const;

 private:
  void require_native(const char* what) const;

  PolicyOptions options_;
  task::TaskOptions task_;
  model::MMDiT model_{nullptr};  // native only
  std::unique_ptr<VelocityModel> velocity_model_;
  std::vector<at::Tensor> trainable_;
  std::vector<std::string> trainable_names_;
};

}  // namespace spotlight::policy
