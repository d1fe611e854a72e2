// c10d process groups behind Communicator. The Gloo and NCCL types are used only through calls
// that LibTorch 1.13 (ProcessGroup subclasses) and 2.x (Backend subclasses) share.
#include "common/parallel/communicator.hpp"

// LibTorch's c10d headers declare the Gloo (and NCCL) groups only under these switches.
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO 1
#endif
#if defined(SPOTLIGHT_WITH_NCCL) && !defined(USE_C10D_NCCL)
#define USE_C10D_NCCL 1
#endif

#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/torch.h>
#ifdef SPOTLIGHT_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace spotlight::parallel {
namespace {

template <class Group>
class C10dCommunicator final : public Communicator {
 public:
  C10dCommunicator(c10::intrusive_ptr<Group> group, int rank, int size, std::string backend,
                   std::string label)
      : group_(std::move(group)),
        rank_(rank),
        size_(size),
        backend_(std::move(backend)),
        label_(std::move(label)) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return backend_; }

  at::Tensor all_to_all(const at::Tensor& in) override {
    if (in.size(0) % size_ != 0) {
      throw std::invalid_argument("sp: all_to_all input dim 0 (" + std::to_string(in.size(0)) +
                                  ") must divide by the group size");
    }
    auto input = in.contiguous();
    auto output = torch::empty_like(input);
    std::vector<int64_t> splits;  // empty: equal splits
    run("all_to_all", [&] { return group_->alltoall_base(output, input, splits, splits); });
    return output;
  }

  at::Tensor all_gather(const at::Tensor& in) override {
    std::vector<at::Tensor> inputs{in.contiguous()};
    std::vector<std::vector<at::Tensor>> outputs(1);
    for (int r = 0; r < size_; ++r)
      outputs[0].push_back(torch::empty_like(inputs[0]));
    run("all_gather", [&] { return group_->allgather(outputs, inputs); });
    return torch::stack(outputs[0], 0);
  }

  void all_reduce(at::Tensor& tensor, ReduceOp op) override {
    if (!tensor.is_contiguous())
      throw std::invalid_argument("all_reduce needs a contiguous tensor");
    std::vector<at::Tensor> tensors{tensor};
    c10d::AllreduceOptions options;
    options.reduceOp = op == ReduceOp::kSum ? c10d::ReduceOp::SUM : c10d::ReduceOp::MAX;
    run("all_reduce", [&] { return group_->allreduce(tensors, options); });
  }

  void broadcast(at::Tensor& tensor, int root) override {
    std::vector<at::Tensor> tensors{tensor};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    run("broadcast", [&] { return group_->broadcast(tensors, options); });
    tensor = tensors[0];
  }

  void barrier() override {
    run("barrier", [&] { return group_->barrier(); });
  }

 private:
  template <class Launch>
  void run(const char* what, Launch launch) {
    try {
      auto work = launch();
      work->wait();
    } catch (const std::exception& e) {
      throw CommunicatorError(label_ + ": " + what + " failed on rank " + std::to_string(rank_) +
                              " of " + std::to_string(size_) + " (" + backend_ + "): " + e.what());
    }
  }

  c10::intrusive_ptr<Group> group_;
  int rank_;
  int size_;
  std::string backend_;
  std::string label_;
};

class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "local"; }
  at::Tensor all_to_all(const at::Tensor& in) override { return in.clone(); }
  at::Tensor all_gather(const at::Tensor& in) override { return in.unsqueeze(0).clone(); }
  void all_reduce(at::Tensor&, ReduceOp) override {}
  void broadcast(at::Tensor&, int) override {}
  void barrier() override {}
};

bool is_cuda(const std::string& device) {
  return device.rfind("cuda", 0) == 0;
}

}  // namespace

std::unique_ptr<Communicator> make_communicator(const c10::intrusive_ptr<c10d::Store>& store,
                                                int rank, int size, const GroupOptions& options) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw std::invalid_argument("sp: rank " + std::to_string(rank) + " / size " +
                                std::to_string(size) + " is not a valid group position");
  }
  if (size == 1) return std::make_unique<LocalCommunicator>();
  try {
    if (is_cuda(options.device)) {
#ifdef SPOTLIGHT_WITH_NCCL
      auto nccl = c10d::ProcessGroupNCCL::Options::create();
      nccl->timeout = options.timeout;
      auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, nccl);
      return std::make_unique<C10dCommunicator<c10d::ProcessGroupNCCL>>(
          std::move(group), rank, size, "nccl", options.label);
#else
      throw std::invalid_argument("sp: device '" + options.device +
                                  "' needs a build with SPOTLIGHT_WITH_CUDA and NCCL's headers");
#endif
    }
    if (options.device != "cpu") {
      throw std::invalid_argument("sp: unknown device '" + options.device + "'");
    }
    auto gloo = c10d::ProcessGroupGloo::Options::create(options.timeout);
    gloo->devices.push_back(
        options.hostname.empty()
            ? c10d::ProcessGroupGloo::createDefaultDevice()
            : c10d::ProcessGroupGloo::createDeviceForHostname(options.hostname));
    gloo->threads = 1;
    auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, gloo);
    return std::make_unique<C10dCommunicator<c10d::ProcessGroupGloo>>(std::move(group), rank, size,
                                                                      "gloo", options.label);
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& e) {
    throw CommunicatorError(options.label + ": rank " + std::to_string(rank) + " of " +
                            std::to_string(size) + " could not form its group: " + e.what());
  }
}

}  // namespace spotlight::parallel
