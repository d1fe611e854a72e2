#pragma once
// The network a policy samples and trains, whatever it is: the built-in MMDiT or a user's
// TorchScript module. One signature for both (docs/algorithm.md's v(x, t, c)):
//
//   velocity(latents [B, C, H, W], timesteps [B] in [0, 1] (1 = noise),
//            condition {prompt_embeds [B, L, D], pooled [B, P]}) -> velocity [B, C, H, W]
//
// Parameters and buffers are named as the module names them (dotted paths), which is how
// checkpoints store them. Not thread-safe: one caller at a time.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "common/sampler/sampler.hpp"
#include "common/task/prompt.hpp"

namespace spotlight::policy {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

class VelocityModel {
 public:
  virtual ~VelocityModel() = default;
  // The conditioning of `prompts`, on the model's device. Records gradients when grad mode is on
  // and the conditioning is trained (the MMDiT's text encoder); throws PolicyError for a prompt
  // the model cannot condition on.
  virtual sampler::Conditioning condition(const std::vector<task::Prompt>& prompts) = 0;
  virtual bool accepts(const task::Prompt& prompt) const = 0;
  virtual at::Tensor velocity(const at::Tensor& x, const at::Tensor& t,
                              const sampler::Conditioning& condition) = 0;
  virtual NamedTensors named_parameters() = 0;
  virtual NamedTensors named_buffers() = 0;
  virtual void set_training(bool training) = 0;
  // {C, H, W} of one sample's latents.
  virtual std::vector<int64_t> sample_shape() const = 0;
};

}  // namespace spotlight::policy
