#include "common/parallel/ulysses.hpp"

#include <cmath>
#include <limits>

#include <torch/torch.h>

namespace spotlight::parallel {
namespace {

// Pads dim 1 of [B, n, ...] with zeros to `length`.
at::Tensor pad_tokens(const at::Tensor& x, std::int64_t length) {
  if (x.size(1) == length) return x;
  auto shape = x.sizes().vec();
  shape[1] = length - x.size(1);
  return torch::cat({x, torch::zeros(shape, x.options())}, 1);
}

}  // namespace

at::Tensor masked_softmax_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                    const at::Tensor& key_valid) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  auto scores = torch::matmul(q, k.transpose(-2, -1)) * scale;
  scores = scores.masked_fill(key_valid.logical_not(), -std::numeric_limits<double>::infinity());
  return torch::matmul(torch::softmax(scores, -1), v);
}

model::AttentionFn ulysses_attention(Communicator& comm, const SequenceShard& shard) {
  const int p = shard.size;
  at::Tensor key_valid;  // defined only when some gathered positions are padding
  if (shard.padded()) {
    const auto valid = shard.gathered_valid();
    std::vector<std::uint8_t> bytes(valid.begin(), valid.end());
    key_valid = torch::from_blob(bytes.data(), {static_cast<int64_t>(bytes.size())}, torch::kUInt8)
                    .to(torch::kBool);  // a copy: `bytes` dies here
  }
  return [&comm, p, key_valid](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
    const int64_t b = q.size(0), h = q.size(1), l = q.size(2), d = q.size(3);
    // [B, H, l, d] -> [B, H/p, p*l, d]: head block i goes to rank i, sequence blocks come back.
    auto to_heads = [&](const at::Tensor& x) {
      auto blocks = x.reshape({b, p, h / p, l, d}).permute({1, 0, 2, 3, 4});
      return comm.all_to_all(blocks).permute({1, 2, 0, 3, 4}).reshape({b, h / p, p * l, d});
    };
    auto qh = to_heads(q), kh = to_heads(k), vh = to_heads(v);
    auto out = key_valid.defined() ? masked_softmax_attention(qh, kh, vh, key_valid.to(q.device()))
                                   : model::softmax_attention(qh, kh, vh);
    // [B, H/p, p*l, d] -> [B, H, l, d]: sequence block j goes back to rank j.
    auto blocks = out.reshape({b, h / p, p, l, d}).permute({2, 0, 1, 3, 4});
    return comm.all_to_all(blocks).permute({1, 0, 2, 3, 4}).reshape({b, h, l, d});
  };
}

SequenceParallelModel::SequenceParallelModel(model::MMDiT model, Communicator& comm)
    : model_(std::move(model)), comm_(comm) {
  const auto& o = model_->options();
  make_sequence_shard(o.text_len(), o.tokens(), o.heads(), comm_.rank(), comm_.size());
}

at::Tensor SequenceParallelModel::forward_encoded(const at::Tensor& x, const at::Tensor& t,
                                                  const at::Tensor& text,
                                                  const at::Tensor& pooled_text) {
  auto& m = *model_;
  const auto& o = m.options();
  if (comm_.size() == 1) return m.forward_encoded(x, t, text, pooled_text);
  const auto shard =
      make_sequence_shard(text.size(1), o.tokens(), o.heads(), comm_.rank(), comm_.size());
  const auto attention = ulysses_attention(comm_, shard);

  auto cond = m.condition(t, pooled_text);
  auto patches = m.patchify(x).narrow(1, shard.image_begin(), shard.image_count());
  auto h = m.patch_embed->forward(patches) +
           m.image_position.narrow(1, shard.image_begin(), shard.image_count());
  h = pad_tokens(h, shard.image_block());
  auto c = pad_tokens(text.narrow(1, shard.text_begin(), shard.text_count()), shard.text_block());
  for (const auto& module : *m.blocks) {
    std::tie(h, c) = module->as<model::JointBlockImpl>()->forward(h, c, cond, attention);
  }
  auto mod = m.final_modulation->forward(cond).chunk(2, 1);
  auto local = m.final_proj->forward(m.final_norm->forward(h) * (1 + mod[1].unsqueeze(1)) +
                                     mod[0].unsqueeze(1));  // [B, image_block, patch_dim]
  // [size, B, image_block, patch_dim] -> [B, tokens, patch_dim]: blocks in rank order, the padding
  // all at the end.
  auto gathered = comm_.all_gather(local).permute({1, 0, 2, 3});
  auto tokens = gathered.reshape({x.size(0), comm_.size() * shard.image_block(), o.patch_dim()})
                    .narrow(1, 0, o.tokens());
  return m.unpatchify(tokens);
}

}  // namespace spotlight::parallel
