#pragma once
// Rendezvous of SP groups: one c10d TCPStore per node (hosted by the node scheduler, clients in
// every rank), and a fresh key prefix per group generation so that a regrouped group never reads
// the keys of the one it replaces.

#include <chrono>
#include <cstdint>
#include <string>

#include <torch/csrc/distributed/c10d/Store.hpp>

namespace spotlight::parallel {

inline constexpr std::chrono::milliseconds kDefaultStoreTimeout{10000};

struct StoreOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;  // 0 with is_server: pick a free port (see store_port)
  bool is_server = false;
  std::chrono::milliseconds timeout = kDefaultStoreTimeout;  // connect and wait
};

// A TCPStore server (is_server) or client. Throws CommunicatorError if it cannot connect.
c10::intrusive_ptr<c10d::Store> open_store(const StoreOptions& options);
// The port a TCPStore returned by open_store listens on / connects to.
std::uint16_t store_port(const c10::intrusive_ptr<c10d::Store>& store);

// `base` seen under "<group>/gen<generation>/": the keys of one generation of one group.
c10::intrusive_ptr<c10d::Store> generation_store(const c10::intrusive_ptr<c10d::Store>& base,
                                                 const std::string& group, std::int64_t generation);

}  // namespace spotlight::parallel
