#pragma once
// Ulysses sequence parallelism for the MMDiT (docs/preemption.md).
//
// Every rank of an SP group holds a shard of the joint text+image sequence (SequenceShard) and
// runs the per-token parts of each block (modulation, qkv, projections, MLP) on it alone. In
// attention an all-to-all turns [B, heads, local_len, d] sequence shards into
// [B, heads/size, size*local_len, d] head shards, every rank attends over the whole sequence for
// its heads (padding keys masked), and a second all-to-all turns the result back.

#include <ATen/core/Tensor.h>

#include "common/model/mmdit.hpp"
#include "common/parallel/communicator.hpp"
#include "common/parallel/sequence_shard.hpp"

namespace spotlight::parallel {

// Softmax attention where keys with key_valid[i] == false get no weight. key_valid: [L] bool.
at::Tensor masked_softmax_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                    const at::Tensor& key_valid);

// The all-to-all attention of `shard`'s rank over `comm` (same rank and size). The returned
// function refers to `comm`, which must outlive it.
model::AttentionFn ulysses_attention(Communicator& comm, const SequenceShard& shard);

// The MMDiT forward spread over an SP group. Every rank calls forward_encoded with the same full
// inputs (what MMDiTImpl::forward_encoded takes) and gets the same full velocity back, equal to
// the single-rank forward within float tolerance. Holds `model` (shared weights) and refers to
// `comm`, which must outlive it. Throws std::invalid_argument if the heads do not divide by the
// group size, CommunicatorError if a collective fails.
class SequenceParallelModel {
 public:
  SequenceParallelModel(model::MMDiT model, Communicator& comm);

  at::Tensor forward_encoded(const at::Tensor& x, const at::Tensor& t, const at::Tensor& text,
                             const at::Tensor& pooled_text);

 private:
  model::MMDiT model_;
  Communicator& comm_;
};

}  // namespace spotlight::parallel
