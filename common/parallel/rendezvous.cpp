#include "common/parallel/rendezvous.hpp"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "common/parallel/communicator.hpp"

namespace spotlight::parallel {

c10::intrusive_ptr<c10d::Store> open_store(const StoreOptions& options) {
  c10d::TCPStoreOptions tcp;
  tcp.port = options.port;
  tcp.isServer = options.is_server;
  tcp.waitWorkers = false;
  tcp.timeout = options.timeout;
  try {
    return c10::make_intrusive<c10d::TCPStore>(options.host, tcp);
  } catch (const std::exception& e) {
    throw CommunicatorError("sp: store " + options.host + ":" + std::to_string(options.port) +
                            (options.is_server ? " (server)" : "") + ": " + e.what());
  }
}

std::uint16_t store_port(const c10::intrusive_ptr<c10d::Store>& store) {
  auto* tcp = dynamic_cast<c10d::TCPStore*>(store.get());
  if (tcp == nullptr) throw std::invalid_argument("sp: store_port needs a TCPStore");
  return tcp->getPort();
}

c10::intrusive_ptr<c10d::Store> generation_store(const c10::intrusive_ptr<c10d::Store>& base,
                                                 const std::string& group,
                                                 std::int64_t generation) {
  return c10::make_intrusive<c10d::PrefixStore>(group + "/gen" + std::to_string(generation) + "/",
                                                base);
}

}  // namespace spotlight::parallel
