#pragma once
// A policy is what the trainer trains and the explorers sample: the MMDiT plus the task's
// vocabulary and image format, on a configured device and dtype. It turns prompts into tokens
// and latents into task images, and samples seeded batches in fixed-size chunks.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "common/config/config.hpp"
#include "common/model/mmdit.hpp"
#include "common/policy/policy_options.hpp"
#include "common/sampler/sampler.hpp"
#include "common/task/image.hpp"
#include "common/task/options.hpp"
#include "common/task/prompt.hpp"
#include "common/task/vocabulary.hpp"

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
  explicit Policy(const PolicyOptions& options, const task::TaskOptions& task = {});

  model::MMDiT& model() { return model_; }
  const model::MMDiTOptions& model_options() const { return model_->options(); }
  const task::TaskOptions& task_options() const { return task_; }
  at::TensorOptions tensor_options() const;

  at::Tensor tokens(const std::vector<task::Prompt>& prompts) const;  // [B, text_len] on device
  at::Tensor images_to_latents(const std::vector<task::Image>& images) const;  // [-1, 1]
  std::vector<task::Image> latents_to_images(const at::Tensor& latents) const;
  // The final images of sampled chunks, in sample order.
  std::vector<task::Image> final_images(const std::vector<sampler::Trajectory>& chunks) const;

  // Samples prompts[i] with seeds[i] in chunks of `chunk` samples (the batch composition is a
  // function of the inputs alone, which keeps results bit-reproducible).
  std::vector<sampler::Trajectory> sample(const std::vector<task::Prompt>& prompts,
                                          const std::vector<uint64_t>& seeds,
                                          const sampler::SamplerOptions& options, int chunk);

  // Weights as safetensors bytes (what the weight store publishes) and back.
  std::string weights_bytes() const;
  void load_weights_bytes(const std::string& bytes);
  void copy_weights_from(const Policy& other);

 private:
  PolicyOptions options_;
  task::TaskOptions task_;
  task::Vocabulary vocabulary_;
  model::MMDiT model_{nullptr};
};

}  // namespace spotlight::policy
