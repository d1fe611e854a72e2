#pragma once
// The per-node SP scheduler (docs/preemption.md). It keeps `ranks` rank processes alive on the
// node with the policy's weights resident, forms an SP group of up to `sp_size` of them, runs
// samples on it, and when a member is lost forms a new group (a new generation: fresh store
// prefix) from the survivors and spares without restarting them. Lost ranks are replaced by new
// processes that copy the weights from a live peer through shared memory, falling back to the
// weight store.
//
// sample(request) is equivalent to:
//   for attempt in 1..max_attempts:
//     if no group or a member is gone: regroup()
//     send the request to every member; wait for every answer
//     all answered ok: return rank 0's latents
//     else: mark lost members (closed stdout), regroup()   // survivors' collectives failed
//   throw NodeError
//
// regroup() picks the live ranks holding the current weights, the largest size <= sp_size that
// the model's heads divide by, and has them join generation+1; it returns once every member has
// joined. Not thread-safe: one thread drives a scheduler. Rank processes die with the thread that
// spawned them (PR_SET_PDEATHSIG): drive a scheduler from a thread that outlives its use.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <ATen/core/Tensor.h>
#include <sys/types.h>

#include "common/metrics/metrics.hpp"
#include "common/parallel/communicator.hpp"
#include "common/sampler/sampler_options.hpp"

namespace spotlight::node {

class NodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct NodeOptions {
  std::filesystem::path rank_binary;  // spotlight-node (runs `spotlight-node rank ...`)
  int ranks = 2;                      // rank processes kept alive: SP members + spares
  int sp_size = 2;                    // wanted group size
  std::string preset = "tiny";
  std::string device = "cpu";  // "cuda": rank slot i uses cuda:i (NCCL); else used as given
  int threads_per_rank = 1;
  // Store prefix and shm segment names, unique per scheduler; "": "node<pid>-<n>".
  std::string name;
  std::chrono::milliseconds op_timeout = parallel::kDefaultOpTimeout;  // ranks' collectives
  std::chrono::milliseconds start_timeout{60000};   // spawn until the rank is ready
  std::chrono::milliseconds reply_timeout{300000};  // any command's answer
  int max_attempts = 3;                             // of one sample, across regroups
  std::optional<std::filesystem::path> rank_log;    // ranks' stderr (default: inherited)
};

// Where ranks fetch weights from the weight store (RedisWeightStore).
struct WeightsLocation {
  std::string redis_host = "127.0.0.1";
  int redis_port = 6379;
  std::string key_prefix;
  std::int64_t version = 0;
};

struct SampleRequest {
  std::vector<std::string> prompts;  // canonical prompt texts
  std::vector<std::uint64_t> seeds;
  sampler::SamplerOptions sampler;
};

struct SampleResult {
  at::Tensor latents;  // [B, C, H, W] float on the CPU
  int attempts = 0;
  int regroups = 0;  // during this sample
};

struct RegroupReport {
  double seconds = 0;
  int size = 0;
  std::int64_t generation = 0;
};

struct LoadReport {
  double seconds = 0;         // the weights copy/fetch + load (not the spawn)
  double spawn_seconds = 0;   // replenish(): starting the new processes until ready
  double export_seconds = 0;  // replenish(): a peer writing the segment (first copy per load)
  std::string source;         // "shm" or "store"
  int ranks = 0;
};

class NodeScheduler {
 public:
  // `registry` (service "explorer"), when given, gets spotlight_explorer_sp_regroup_seconds and
  // spotlight_explorer_sp_regroups_total; it must outlive the scheduler.
  explicit NodeScheduler(NodeOptions options, metrics::Registry* registry = nullptr);
  ~NodeScheduler();  // ends every rank process
  NodeScheduler(const NodeScheduler&) = delete;
  NodeScheduler& operator=(const NodeScheduler&) = delete;

  // Opens the node's store and spawns the ranks; returns once all are ready.
  void start();
  // Every live rank loads `bytes` (one shared-memory segment written here).
  LoadReport load_weights(std::string_view bytes);
  // Every live rank fetches the version from the weight store.
  LoadReport load_weights(const WeightsLocation& where);
  RegroupReport regroup();
  SampleResult sample(const SampleRequest& request);
  // Seconds per SP forward of `batch` samples on the current group (mean of `iterations`).
  double forward_seconds(int batch, int iterations);
  enum class WeightsSource { kPeer, kStore };
  // Spawns ranks until `ranks` are alive; new ones copy weights from a live peer (shm), else
  // (or with prefer = kStore) from the store location of the last load. Returns the copy's
  // report (ranks = 0: none was missing).
  LoadReport replenish(WeightsSource prefer = WeightsSource::kPeer);
  // Blocks until `at_least` ranks are observed gone (closed stdout / exited) or `timeout`;
  // returns how many are marked lost (not yet replaced).
  int await_loss(std::chrono::milliseconds timeout, int at_least = 1);

  std::vector<pid_t> group_pids() const;
  std::vector<pid_t> all_pids() const;
  int group_size() const;
  std::int64_t generation() const;
  std::int64_t regroups() const;

  // Test hook: called after a sample's commands went out, before the answers are read.
  std::function<void()> after_dispatch;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spotlight::node
