#pragma once
// The trainer's data parallelism over a process group of R ranks (common/parallel): what the
// ranks exchange in one iteration (docs/data-parallel.md).
//
//   rank 0: selection = seeds.select(k, prompts); share_selection(group, selection, ...)
//   others: share_selection(group, selection, ...)           // receives rank 0's
//   every rank: rolls out and scores the samples it owns (owner_of), then
//   share_sample_table(group, table)                          // every sample's reward & counts
//   every update: reduce_gradients(group, params)             // one bucketed all-reduce (sum)
//   every K iterations: check_weights_agree(group, params, k) // throws WeightsDiverged
//
// Every function is a collective: every rank of the group calls it in the same order. `device`
// is where the exchanged tensors travel: the model's (NCCL takes CUDA tensors only).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "common/parallel/communicator.hpp"
#include "services/trainer/seed_source.hpp"

namespace spotlight::trainer {

// Buckets of gradients are all-reduced at most this many bytes at a time.
inline constexpr std::size_t kDefaultGradientBucketBytes = std::size_t{64} << 20;

// The ranks' weights differ: a rank stepped on other gradients, or other weights were loaded.
class WeightsDiverged : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The rank that rolls out, scores and trains sample `sample` of an iteration (its flat index in
// group order): micro-batch m = sample / micro_batch goes to rank m % ranks, so consecutive
// micro-batches of an update run on different ranks.
int owner_of(std::size_t sample, int micro_batch, int ranks);

// Rank 0's selection to every rank. Rollouts exploration already sampled travel only when rank 0
// does not own them (`owner(prompt, index in group)` != 0); they arrive with `tensor_options`.
void share_selection(parallel::Communicator& group, SeedSelection& selection,
                     const std::function<int(std::size_t, std::size_t)>& owner,
                     const at::TensorOptions& tensor_options);  // its device as above

// Sums a [samples, columns] double table in which each rank filled only the rows it owns.
// Returns it as a CPU double tensor.
void share_sample_table(parallel::Communicator& group, at::Tensor& table, at::Device device);

struct GradientReduction {
  std::int64_t bytes = 0;  // gradient bytes all-reduced (each rank's contribution)
  int buckets = 0;
  double seconds = 0.0;
};

// Replaces every parameter's gradient (undefined: zeros) with the sum over the ranks, in
// buckets of at most `bucket_bytes` of one dtype and device each.
GradientReduction reduce_gradients(parallel::Communicator& group,
                                   const std::vector<at::Tensor>& parameters,
                                   std::size_t bucket_bytes = kDefaultGradientBucketBytes);

// Per rank: (sum, sum of squares, sum of index-weighted values) of the parameters, in double.
at::Tensor weights_checksum(const std::vector<at::Tensor>& parameters);
// Throws WeightsDiverged naming the ranks and their checksums unless all are bitwise equal.
void check_weights_agree(parallel::Communicator& group, const std::vector<at::Tensor>& parameters,
                         std::int64_t iteration, at::Device device = at::kCPU);

// Replaces `bytes` on every rank with rank 0's.
void broadcast_bytes(parallel::Communicator& group, std::string& bytes,
                     at::Device device = at::kCPU);
// Every rank's `values` (same length everywhere) reduced elementwise, as doubles.
std::vector<double> reduce_values(parallel::Communicator& group, std::vector<double> values,
                                  parallel::ReduceOp op, at::Device device = at::kCPU);

}  // namespace spotlight::trainer
