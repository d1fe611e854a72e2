#include "common/parallel/process_group.hpp"

#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <string_view>
#include <utility>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "common/parallel/rendezvous.hpp"

namespace spotlight::parallel {
namespace {

long long parse_integer(const char* name, const char* text, long long low, long long high) {
  const std::string_view s(text);
  long long value = 0;
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (error != std::errc() || end != s.data() + s.size() || value < low || value > high) {
    throw std::invalid_argument(std::string("process group: ") + name + "='" + text +
                                "' is not an integer in [" + std::to_string(low) + ", " +
                                std::to_string(high) + "]");
  }
  return value;
}

// Keeps the store (and with rank 0 its server) alive as long as the group: NCCL reads it again
// when it creates a communicator lazily.
class StoreBackedCommunicator final : public Communicator {
 public:
  StoreBackedCommunicator(c10::intrusive_ptr<c10d::Store> store, std::unique_ptr<Communicator> g)
      : store_(std::move(store)), group_(std::move(g)) {}
  ~StoreBackedCommunicator() override { group_.reset(); }  // the group before its store

  int rank() const override { return group_->rank(); }
  int size() const override { return group_->size(); }
  std::string backend() const override { return group_->backend(); }
  at::Tensor all_to_all(const at::Tensor& in) override { return group_->all_to_all(in); }
  at::Tensor all_gather(const at::Tensor& in) override { return group_->all_gather(in); }
  void all_reduce(at::Tensor& tensor, ReduceOp op) override { group_->all_reduce(tensor, op); }
  void broadcast(at::Tensor& tensor, int root) override { group_->broadcast(tensor, root); }
  void barrier() override { group_->barrier(); }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  std::unique_ptr<Communicator> group_;
};

}  // namespace

ProcessGroupOptions process_group_from_env(ProcessGroupOptions o,
                                           const std::function<const char*(const char*)>& getenv) {
  if (const char* v = getenv("WORLD_SIZE")) {
    o.world_size = static_cast<int>(parse_integer("WORLD_SIZE", v, 1, 1 << 20));
  }
  if (const char* v = getenv("RANK")) {
    o.rank = static_cast<int>(parse_integer("RANK", v, 0, 1 << 20));
  }
  if (const char* v = getenv("MASTER_ADDR")) {
    if (*v == '\0') throw std::invalid_argument("process group: MASTER_ADDR is empty");
    o.master_addr = v;
  }
  if (const char* v = getenv("MASTER_PORT")) {
    o.master_port = static_cast<std::uint16_t>(parse_integer("MASTER_PORT", v, 1, 65535));
  }
  if (o.rank >= o.world_size) {
    throw std::invalid_argument("process group: RANK " + std::to_string(o.rank) +
                                " is outside WORLD_SIZE " + std::to_string(o.world_size));
  }
  return o;
}

std::unique_ptr<Communicator> open_process_group(const ProcessGroupOptions& o) {
  if (o.world_size == 1) return make_communicator({}, 0, 1, o.group);
  StoreOptions store_options;
  store_options.host = o.master_addr;
  store_options.port = o.master_port;
  store_options.is_server = o.rank == 0;
  store_options.timeout = o.rendezvous_timeout;
  auto store = open_store(store_options);
  auto group_options = o.group;
  // Off loopback, Gloo must listen on an address the other hosts reach: this host's name.
  if (group_options.hostname == "127.0.0.1" && o.master_addr != "127.0.0.1" &&
      o.master_addr != "localhost") {
    group_options.hostname.clear();  // Gloo's default device: this host's name
  }
  auto group = make_communicator(c10::make_intrusive<c10d::PrefixStore>(o.group.label + "/", store),
                                 o.rank, o.world_size, group_options);
  return std::make_unique<StoreBackedCommunicator>(std::move(store), std::move(group));
}

}  // namespace spotlight::parallel
