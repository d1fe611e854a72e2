#pragma once
// A tiny MMDiT (SD3-style multimodal diffusion transformer) for the embedded task.
//
// Text tokens and image patches keep separate weights (adaLN-zero modulation, qkv, output
// projection, MLP) but attend jointly over the concatenated sequence. Conditioning is the
// timestep embedding plus the pooled text encoding. forward(x_t, t, tokens) predicts the
// flow-matching velocity v = dx/dt with t = 1 noise and t = 0 image; output shape equals x_t's.

#include <functional>
#include <optional>
#include <string>

#include <c10/core/ScalarType.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

namespace spotlight::model {

struct MMDiTOptions {
  MMDiTOptions(int64_t hidden, int64_t depth, int64_t heads)
      : hidden_(hidden), depth_(depth), heads_(heads) {}
  TORCH_ARG(int64_t, hidden);
  TORCH_ARG(int64_t, depth);
  TORCH_ARG(int64_t, heads);
  TORCH_ARG(int64_t, mlp_ratio) = 4;
  TORCH_ARG(int64_t, image_size) = 32;
  TORCH_ARG(int64_t, channels) = 3;
  TORCH_ARG(int64_t, patch) = 4;
  TORCH_ARG(int64_t, vocab_size) = 64;
  TORCH_ARG(int64_t, text_len) = 12;
  TORCH_ARG(int64_t, text_depth) = 1;

 public:
  int64_t tokens() const { return (image_size_ / patch_) * (image_size_ / patch_); }
  int64_t patch_dim() const { return channels_ * patch_ * patch_; }
  // Multiply-adds of one forward of one sample, counting matrix products only.
  int64_t macs_per_sample() const;
};

// Named size presets: "micro" (tests), "mini", "tiny" (demo), "small", "base", and
// "qwen-image-like" (Qwen-Image's MMDiT dimensions, for benchmarks).
MMDiTOptions mmdit_preset(const std::string& name);

// Attention over [B, heads, L, head_dim] tensors. The default is exact softmax attention
// (LibTorch 2.x: at::scaled_dot_product_attention; 1.13: matmul, fp32 softmax, matmul); the
// sequence-parallel runtime substitutes an all-to-all wrapper around it.
using AttentionFn =
    std::function<at::Tensor(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v)>;
at::Tensor softmax_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

// One stream's half of a joint block: modulation, qkv, out-projection and MLP.
struct StreamWeightsImpl : torch::nn::Module {
  StreamWeightsImpl(int64_t hidden, int64_t mlp_ratio);
  torch::nn::Linear modulation{nullptr}, qkv{nullptr}, proj{nullptr}, fc1{nullptr}, fc2{nullptr};
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
};
TORCH_MODULE(StreamWeights);

struct JointBlockImpl : torch::nn::Module {
  JointBlockImpl(int64_t hidden, int64_t heads, int64_t mlp_ratio);
  // Returns the updated (image, text) token streams.
  std::pair<at::Tensor, at::Tensor> forward(const at::Tensor& x, const at::Tensor& c,
                                            const at::Tensor& cond, const AttentionFn& attention);
  int64_t heads;
  StreamWeights image{nullptr}, text{nullptr};
};
TORCH_MODULE(JointBlock);

// Prompt encoder over the task's fixed vocabulary: embeddings + a few self-attention layers.
struct TextEncoderImpl : torch::nn::Module {
  TextEncoderImpl(const MMDiTOptions& options);
  at::Tensor forward(const at::Tensor& tokens);  // [B, L] int64 -> [B, L, hidden]
  int64_t heads;
  torch::nn::Embedding embed{nullptr};
  at::Tensor position;
  torch::nn::ModuleList layers;
  torch::nn::LayerNorm norm{nullptr};
};
TORCH_MODULE(TextEncoder);

struct MMDiTImpl : torch::nn::Module {
  explicit MMDiTImpl(MMDiTOptions options);

  // x: [B, C, H, W] latents, t: [B] in [0, 1], tokens: [B, text_len] int64 -> velocity [B, C, H,
  // W].
  at::Tensor forward(const at::Tensor& x, const at::Tensor& t, const at::Tensor& tokens);
  // Same, with the text encoding precomputed (encode_text) so sampling loops encode once.
  at::Tensor forward_encoded(const at::Tensor& x, const at::Tensor& t, const at::Tensor& text,
                             const at::Tensor& pooled_text);
  std::pair<at::Tensor, at::Tensor> encode_text(const at::Tensor& tokens);
  // The blocks' conditioning vector [B, hidden] from t [B] and the pooled text encoding.
  at::Tensor condition(const at::Tensor& t, const at::Tensor& pooled_text);

  at::Tensor patchify(const at::Tensor& x) const;    // [B, C, H, W] -> [B, N, C*p*p]
  at::Tensor unpatchify(const at::Tensor& x) const;  // inverse

  const MMDiTOptions& options() const { return options_; }
  void set_attention(AttentionFn attention) { attention_ = std::move(attention); }
  // Mixed precision (common/model/autocast.hpp): with a dtype, encode_text and forward_encoded
  // run their matrix products in it under autocast; parameters stay as they are, and both return
  // tensors in the parameters' dtype. nullopt (the default): no autocast.
  void set_autocast(std::optional<c10::ScalarType> dtype) { autocast_ = dtype; }
  std::optional<c10::ScalarType> autocast() const { return autocast_; }

  TextEncoder text_encoder{nullptr};
  torch::nn::Linear patch_embed{nullptr}, time_fc1{nullptr}, time_fc2{nullptr}, pooled_fc{nullptr};
  torch::nn::Linear final_modulation{nullptr}, final_proj{nullptr};
  torch::nn::LayerNorm final_norm{nullptr};
  at::Tensor image_position;
  torch::nn::ModuleList blocks;

 private:
  at::Tensor forward_blocks(const at::Tensor& x, const at::Tensor& t, const at::Tensor& text,
                            const at::Tensor& pooled_text);

  MMDiTOptions options_;
  AttentionFn attention_ = softmax_attention;
  std::optional<c10::ScalarType> autocast_;
};
TORCH_MODULE(MMDiT);

}  // namespace spotlight::model
