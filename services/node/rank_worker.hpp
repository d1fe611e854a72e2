#pragma once
// The rank process of a node (`spotlight-node rank ...`): keeps a policy's weights resident and
// serves as a member of one SP group at a time, formed and re-formed on command. It reads one
// JSON command per line on stdin and answers each with one JSON line on stdout, in order:
//
//   (on start)                                   -> {"ready":true,"pid":P}
//   {"op":"load","shm":NAME}                     -> weights from a peer's shared-memory segment
//   {"op":"load","redis_host":H,"redis_port":P,"key_prefix":K,"version":V}
//                                                -> weights fetched from the weight store
//   {"op":"export","shm":NAME}                   -> publishes its weights to a segment
//   {"op":"form","generation":G,"rank":R,"size":N}
//                                                -> drops its group, joins generation G (store
//                                                   prefix "<group>/gen<G>/") as rank R of N
//   {"op":"sample","prompts":[TEXT..],"seeds":[S..],"steps":K,"sde":B,"noise_level":A,"shift":F}
//                                                -> SP sampling; rank 0 answers with the final
//                                                   latents ("latents": flat floats, "shape")
//   {"op":"forward_bench","batch":B,"iterations":N} -> seconds of N SP forwards
//   {"op":"quit"}                                -> exits 0
//
// Answers: {"ok":true,"seconds":S,...} or {"ok":false,"error":E,"communicator":B}; communicator
// is true when a collective failed (a peer is gone): the group is dropped, weights stay loaded.

#include <chrono>
#include <cstdint>
#include <istream>
#include <ostream>
#include <string>

#include "common/config/arguments.hpp"
#include "common/parallel/communicator.hpp"

namespace spotlight::node {

struct RankWorkerOptions {
  std::string store_host = "127.0.0.1";
  std::uint16_t store_port = 0;  // the node scheduler's TCPStore
  std::string group = "node";    // store key prefix of this node's groups
  std::string preset = "tiny";   // model preset
  std::string device = "cpu";
  int threads = 1;  // intra-op threads of this rank
  std::chrono::milliseconds op_timeout = parallel::kDefaultOpTimeout;

  // From the command line of rank_command_line(); throws config::ConfigError naming a missing or
  // bad option (--store-port is required; --threads >= 1).
  static RankWorkerOptions from(const config::Arguments& args);
};

// `spotlight-node rank --store-port=P [--store-host=H] [--group=G] [--preset=P] [--device=D]
// [--threads=N] [--op-timeout-ms=N]`, the command line the node scheduler gives its ranks.
config::ArgumentParser rank_command_line();

// The loop described above; returns the process exit code.
int run_rank_worker(const RankWorkerOptions& options, std::istream& in, std::ostream& out);

}  // namespace spotlight::node
