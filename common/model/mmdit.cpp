#include "common/model/mmdit.hpp"

#include <cmath>
#include <stdexcept>

#include <torch/torch.h>
#include <torch/version.h>

#include "common/model/autocast.hpp"

namespace spotlight::model {
namespace F = torch::nn::functional;

namespace {

constexpr int64_t kTimeFrequencies = 128;

torch::nn::Linear linear(int64_t in, int64_t out) {
  torch::nn::Linear layer(torch::nn::LinearOptions(in, out));
  torch::nn::init::xavier_uniform_(layer->weight);
  torch::nn::init::zeros_(layer->bias);
  return layer;
}

torch::nn::Linear zero_linear(int64_t in, int64_t out) {
  torch::nn::Linear layer(torch::nn::LinearOptions(in, out));
  torch::nn::init::zeros_(layer->weight);
  torch::nn::init::zeros_(layer->bias);
  return layer;
}

torch::nn::LayerNorm plain_norm(int64_t hidden) {
  return torch::nn::LayerNorm(
      torch::nn::LayerNormOptions({hidden}).elementwise_affine(false).eps(1e-6));
}

// Sinusoidal embedding of t in [0, 1] (scaled by 1000 as in DiT).
at::Tensor timestep_embedding(const at::Tensor& t) {
  const int64_t half = kTimeFrequencies / 2;
  auto freqs =
      torch::exp(-std::log(10000.0) * torch::arange(half, t.options().dtype(torch::kFloat)) / half);
  auto args = (t.to(torch::kFloat) * 1000.0).unsqueeze(1) * freqs.unsqueeze(0);
  return torch::cat({torch::cos(args), torch::sin(args)}, 1).to(t.scalar_type());
}

// A linear layer on [B, in] or [B, L, in] as one matrix product per sample (bmm against the
// weight broadcast over the batch, no copy). A single product over all B x L rows may round
// differently with the number of rows (BLAS picks kernels and blockings by size), and a sample's
// output must not depend on the batch it is in: same seed + same weights => the same trajectory,
// however samples are batched (so an explored candidate is bit for bit the rollout).
at::Tensor per_sample(const torch::nn::Linear& layer, const at::Tensor& x) {
  const auto& w = layer->weight;  // [out, in]
  const auto rows = x.dim() == 2 ? x.unsqueeze(1) : x;
  auto out = torch::bmm(rows, w.t().unsqueeze(0).expand({rows.size(0), w.size(1), w.size(0)}));
  out = out + layer->bias;
  return x.dim() == 2 ? out.squeeze(1) : out;
}

at::Tensor modulate(const at::Tensor& x, const at::Tensor& shift, const at::Tensor& scale) {
  return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1);
}

// [B, L, 3*hidden] -> three [B, heads, L, head_dim] tensors.
std::array<at::Tensor, 3> split_heads(const at::Tensor& qkv, int64_t heads) {
  const auto b = qkv.size(0), l = qkv.size(1), d = qkv.size(2) / 3 / heads;
  auto parts = qkv.view({b, l, 3, heads, d}).permute({2, 0, 3, 1, 4}).unbind(0);
  return {parts[0], parts[1], parts[2]};
}

at::Tensor merge_heads(const at::Tensor& x) {  // [B, heads, L, d] -> [B, L, heads*d]
  return x.transpose(1, 2).reshape({x.size(0), x.size(2), x.size(1) * x.size(3)});
}

}  // namespace

int64_t MMDiTOptions::macs_per_sample() const {
  const int64_t h = hidden_, n = tokens(), l = tokens() + text_len_;
  const int64_t per_token = (4 + 2 * mlp_ratio_) * h * h;
  int64_t macs = depth_ * (l * per_token + 2 * l * l * h);
  macs += text_depth_ * (text_len_ * per_token + 2 * text_len_ * text_len_ * h);
  macs += 2 * n * patch_dim() * h;       // patch embedding and final projection
  macs += (depth_ * 2 * 6 + 2) * h * h;  // modulation
  return macs;
}

MMDiTOptions mmdit_preset(const std::string& name) {
  if (name == "micro") return MMDiTOptions(32, 2, 2).text_depth(1).image_size(32).patch(8);
  // Between micro and tiny: micro's width with tiny's patch grid (64 tokens), so that a short
  // pretraining on the single-object category yields a base that partly follows prompts (the
  // chaos e2e test post-trains it and checks that validation improves).
  if (name == "mini") return MMDiTOptions(64, 2, 2).text_depth(1).image_size(32).patch(4);
  if (name == "tiny") return MMDiTOptions(128, 4, 4).text_depth(1);
  if (name == "small") return MMDiTOptions(256, 8, 8).text_depth(2);
  if (name == "base") return MMDiTOptions(512, 12, 8).text_depth(2);
  // Qwen-Image's MMDiT in width, depth and sequence (hidden 3072, 24 heads of 128, 60 joint
  // blocks: about 20B parameters; 4096 image tokens as at 1024x1024), on the task's RGB latents
  // (128 x 128 in patches of 2) instead of its VAE's. For benchmarks (bench.depth builds fewer
  // blocks); its text encoder is the embedded one, not a 7B language model.
  if (name == "qwen-image-like") {
    return MMDiTOptions(3072, 60, 24).text_depth(1).image_size(128).patch(2);
  }
  throw std::invalid_argument("model: unknown preset '" + name +
                              "' (known: micro, mini, tiny, small, base, qwen-image-like)");
}

at::Tensor softmax_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
#if TORCH_VERSION_MAJOR >= 2
  // The same function through LibTorch's fused kernels (flash / memory-efficient on CUDA).
  return at::scaled_dot_product_attention(q, k, v);
#else
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  // The softmax in fp32 whatever the scores' dtype (bf16 under autocast).
  auto weights = torch::softmax(torch::matmul(q, k.transpose(-2, -1)) * scale, -1, at::kFloat)
                     .to(v.scalar_type());
  return torch::matmul(weights, v);
#endif
}

StreamWeightsImpl::StreamWeightsImpl(int64_t hidden, int64_t mlp_ratio) {
  modulation = register_module("modulation", zero_linear(hidden, 6 * hidden));
  qkv = register_module("qkv", linear(hidden, 3 * hidden));
  proj = register_module("proj", linear(hidden, hidden));
  fc1 = register_module("fc1", linear(hidden, mlp_ratio * hidden));
  fc2 = register_module("fc2", linear(mlp_ratio * hidden, hidden));
  norm1 = register_module("norm1", plain_norm(hidden));
  norm2 = register_module("norm2", plain_norm(hidden));
}

JointBlockImpl::JointBlockImpl(int64_t hidden, int64_t heads, int64_t mlp_ratio) : heads(heads) {
  image = register_module("image", StreamWeights(hidden, mlp_ratio));
  text = register_module("text", StreamWeights(hidden, mlp_ratio));
}

std::pair<at::Tensor, at::Tensor> JointBlockImpl::forward(const at::Tensor& x, const at::Tensor& c,
                                                          const at::Tensor& cond,
                                                          const AttentionFn& attention) {
  auto mx = per_sample(image->modulation, cond).chunk(6, 1);
  auto mc = per_sample(text->modulation, cond).chunk(6, 1);
  auto qkv_x =
      split_heads(per_sample(image->qkv, modulate(image->norm1->forward(x), mx[0], mx[1])), heads);
  auto qkv_c =
      split_heads(per_sample(text->qkv, modulate(text->norm1->forward(c), mc[0], mc[1])), heads);
  // Joint sequence: text tokens first, then image tokens.
  auto out = merge_heads(attention(torch::cat({qkv_c[0], qkv_x[0]}, 2),
                                   torch::cat({qkv_c[1], qkv_x[1]}, 2),
                                   torch::cat({qkv_c[2], qkv_x[2]}, 2)));
  const int64_t text_len = c.size(1);
  auto out_c = out.narrow(1, 0, text_len);
  auto out_x = out.narrow(1, text_len, x.size(1));

  auto x1 = x + mx[2].unsqueeze(1) * per_sample(image->proj, out_x);
  auto c1 = c + mc[2].unsqueeze(1) * per_sample(text->proj, out_c);
  auto mlp = [](StreamWeights& s, const at::Tensor& h, const at::Tensor& shift,
                const at::Tensor& scale) {
    return per_sample(s->fc2,
                      F::gelu(per_sample(s->fc1, modulate(s->norm2->forward(h), shift, scale)),
                              F::GELUFuncOptions().approximate("tanh")));
  };
  x1 = x1 + mx[5].unsqueeze(1) * mlp(image, x1, mx[3], mx[4]);
  c1 = c1 + mc[5].unsqueeze(1) * mlp(text, c1, mc[3], mc[4]);
  return {x1, c1};
}

TextEncoderImpl::TextEncoderImpl(const MMDiTOptions& o) : heads(o.heads()) {
  embed = register_module("embed", torch::nn::Embedding(o.vocab_size(), o.hidden()));
  torch::nn::init::normal_(embed->weight, 0.0, 0.02);
  position = register_parameter("position", torch::randn({1, o.text_len(), o.hidden()}) * 0.02);
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < o.text_depth(); ++i) {
    layers->push_back(StreamWeights(o.hidden(), o.mlp_ratio()));
  }
  norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.hidden()})));
}

at::Tensor TextEncoderImpl::forward(const at::Tensor& tokens) {
  auto h = embed->forward(tokens) + position.narrow(1, 0, tokens.size(1));
  for (const auto& module : *layers) {
    auto layer = module->as<StreamWeightsImpl>();
    auto qkv = split_heads(per_sample(layer->qkv, layer->norm1->forward(h)), heads);
    h = h + per_sample(layer->proj, merge_heads(softmax_attention(qkv[0], qkv[1], qkv[2])));
    h = h + per_sample(layer->fc2, F::gelu(per_sample(layer->fc1, layer->norm2->forward(h)),
                                           F::GELUFuncOptions().approximate("tanh")));
  }
  return norm->forward(h);
}

MMDiTImpl::MMDiTImpl(MMDiTOptions options) : options_(options) {
  const auto& o = options_;
  if (o.image_size() % o.patch() != 0 || o.hidden() % o.heads() != 0) {
    throw std::invalid_argument("model: image_size must divide by patch and hidden by heads");
  }
  text_encoder = register_module("text_encoder", TextEncoder(o));
  patch_embed = register_module("patch_embed", linear(o.patch_dim(), o.hidden()));
  image_position =
      register_parameter("image_position", torch::randn({1, o.tokens(), o.hidden()}) * 0.02);
  time_fc1 = register_module("time_fc1", linear(kTimeFrequencies, o.hidden()));
  time_fc2 = register_module("time_fc2", linear(o.hidden(), o.hidden()));
  pooled_fc = register_module("pooled_fc", linear(o.hidden(), o.hidden()));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < o.depth(); ++i) {
    blocks->push_back(JointBlock(o.hidden(), o.heads(), o.mlp_ratio()));
  }
  final_norm = register_module("final_norm", plain_norm(o.hidden()));
  final_modulation = register_module("final_modulation", zero_linear(o.hidden(), 2 * o.hidden()));
  final_proj = register_module("final_proj", zero_linear(o.hidden(), o.patch_dim()));
}

at::Tensor MMDiTImpl::patchify(const at::Tensor& x) const {
  const auto& o = options_;
  const int64_t b = x.size(0), g = o.image_size() / o.patch(), p = o.patch();
  return x.reshape({b, o.channels(), g, p, g, p})
      .permute({0, 2, 4, 1, 3, 5})
      .reshape({b, g * g, o.patch_dim()});
}

at::Tensor MMDiTImpl::unpatchify(const at::Tensor& x) const {
  const auto& o = options_;
  const int64_t b = x.size(0), g = o.image_size() / o.patch(), p = o.patch();
  return x.reshape({b, g, g, o.channels(), p, p})
      .permute({0, 3, 1, 4, 2, 5})
      .reshape({b, o.channels(), o.image_size(), o.image_size()});
}

std::pair<at::Tensor, at::Tensor> MMDiTImpl::encode_text(const at::Tensor& tokens) {
  at::Tensor text;
  {
    const AutocastGuard guard(tokens.device().type(), autocast_);
    text = text_encoder->forward(tokens);
  }
  text = text.to(image_position.scalar_type());
  return {text, text.mean(1)};
}

at::Tensor MMDiTImpl::forward(const at::Tensor& x, const at::Tensor& t, const at::Tensor& tokens) {
  auto [text, pooled] = encode_text(tokens);
  return forward_encoded(x, t, text, pooled);
}

at::Tensor MMDiTImpl::condition(const at::Tensor& t, const at::Tensor& pooled_text) {
  auto temb = per_sample(time_fc2, F::silu(per_sample(time_fc1, timestep_embedding(t))));
  return F::silu(temb + per_sample(pooled_fc, pooled_text));
}

at::Tensor MMDiTImpl::forward_encoded(const at::Tensor& x, const at::Tensor& t,
                                      const at::Tensor& text, const at::Tensor& pooled_text) {
  at::Tensor velocity;
  {
    const AutocastGuard guard(x.device().type(), autocast_);
    velocity = forward_blocks(x, t, text, pooled_text);
  }
  return velocity.to(x.scalar_type());
}

at::Tensor MMDiTImpl::forward_blocks(const at::Tensor& x, const at::Tensor& t,
                                     const at::Tensor& text, const at::Tensor& pooled_text) {
  auto cond = condition(t, pooled_text);
  auto h = per_sample(patch_embed, patchify(x)) + image_position;
  auto c = text;
  for (const auto& module : *blocks) {
    std::tie(h, c) = module->as<JointBlockImpl>()->forward(h, c, cond, attention_);
  }
  auto m = per_sample(final_modulation, cond).chunk(2, 1);
  return unpatchify(per_sample(final_proj, modulate(final_norm->forward(h), m[0], m[1])));
}

}  // namespace spotlight::model
