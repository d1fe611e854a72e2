#pragma once
// A sequence-parallel group's collectives, over a c10d process group (Gloo on CPU, NCCL on CUDA
// when built with SPOTLIGHT_WITH_CUDA and NCCL's headers: SPOTLIGHT_WITH_NCCL). The interface hides
// which c10d type backs it: LibTorch 1.x has ProcessGroupGloo derive from ProcessGroup, 2.x from
// Backend; both share these calls.
//
// Every rank of a group must call the collectives in the same order with tensors of the same
// shape. A collective that fails (a peer died, the op timed out) throws CommunicatorError: the
// group is then unusable and its owner drops it and forms a new one (a new generation).
// Not thread-safe: one thread drives a communicator.

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace spotlight::parallel {

// Collectives on a healthy loopback group take milliseconds; a dead peer shows up as a closed
// connection at once, so this bounds only a peer that hangs.
inline constexpr std::chrono::milliseconds kDefaultOpTimeout{5000};

// The reduction of all_reduce.
enum class ReduceOp { kSum, kMax };

struct GroupOptions {
  std::string device = "cpu";  // "cpu" -> Gloo, "cuda[:N]" -> NCCL (SPOTLIGHT_WITH_NCCL only)
  std::chrono::milliseconds timeout = kDefaultOpTimeout;  // rendezvous and every collective
  // Address this rank's Gloo transport listens on; empty: this host's name (other hosts' peers).
  std::string hostname = "127.0.0.1";
  std::string label = "sp";  // names the group in error messages
};

// A collective or the group's formation failed; the message names the operation and the rank.
class CommunicatorError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;  // "gloo", "nccl" or "local" (size 1)

  // Equal-split all-to-all over dim 0: block i of `in` (dim 0 split into size() blocks) goes to
  // rank i, and block j of the returned tensor came from rank j. in.size(0) % size() == 0.
  virtual at::Tensor all_to_all(const at::Tensor& in) = 0;
  // Every rank's `in` (same shape everywhere) stacked along a new dim 0 in rank order.
  virtual at::Tensor all_gather(const at::Tensor& in) = 0;
  // Replaces `tensor` (contiguous, same shape and dtype everywhere) in place on every rank with
  // the elementwise reduction of every rank's. Every rank ends with bitwise the same values.
  virtual void all_reduce(at::Tensor& tensor, ReduceOp op) = 0;
  // Replaces `tensor` on every rank with root's.
  virtual void broadcast(at::Tensor& tensor, int root) = 0;
  virtual void barrier() = 0;
};

// Forms (rendezvous through `store`, which every member passes with the same prefix) and returns
// rank `rank` of a group of `size`. size 1 returns a local communicator without a process group.
// Throws std::invalid_argument for bad rank/size/device and CommunicatorError when the group
// cannot form within options.timeout.
std::unique_ptr<Communicator> make_communicator(const c10::intrusive_ptr<c10d::Store>& store,
                                                int rank, int size,
                                                const GroupOptions& options = {});

}  // namespace spotlight::parallel
