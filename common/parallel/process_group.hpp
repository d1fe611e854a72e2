#pragma once
// A process group factory: the processes of one job (the trainer's R ranks) form a c10d group
// through a TCPStore that rank 0 hosts at MASTER_ADDR:MASTER_PORT, the torchrun convention, so
// torchrun-style launchers, compose and Kubernetes indexed Jobs start them alike. Gloo on CPU,
// NCCL for "cuda[:N]" devices in a CUDA build with NCCL (communicator.hpp). The store and the
// process group types stay in the .cpp.
//
//   options = process_group_from_env(defaults)   // RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
//   group = open_process_group(options)          // returns once all world_size ranks joined
//
// world_size 1 forms no group (a local communicator). A rank that has not joined within
// rendezvous_timeout fails every other's open_process_group with CommunicatorError.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/parallel/communicator.hpp"

namespace spotlight::parallel {

inline constexpr std::chrono::milliseconds kDefaultRendezvousTimeout{60000};
inline constexpr std::uint16_t kDefaultMasterPort = 29500;

struct ProcessGroupOptions {
  int rank = 0;
  int world_size = 1;
  std::string master_addr = "127.0.0.1";  // rank 0's host: it serves the store there
  std::uint16_t master_port = kDefaultMasterPort;
  std::chrono::milliseconds rendezvous_timeout = kDefaultRendezvousTimeout;
  // device, collective timeout and the name used in errors; hostname is this rank's address
  // for Gloo (MASTER_ADDR's interface when left at loopback and MASTER_ADDR is not).
  GroupOptions group;
};

// `defaults` with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT applied where set (`getenv`
// reads a variable; nullptr: unset). Throws std::invalid_argument naming the variable when one
// is malformed or RANK is outside [0, WORLD_SIZE).
ProcessGroupOptions process_group_from_env(
    ProcessGroupOptions defaults, const std::function<const char*(const char*)>& getenv =
                                      [](const char* name) { return std::getenv(name); });

// Forms the group (above). Throws CommunicatorError when the store or the group cannot form.
std::unique_ptr<Communicator> open_process_group(const ProcessGroupOptions& options);

}  // namespace spotlight::parallel
