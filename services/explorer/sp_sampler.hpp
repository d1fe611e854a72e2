#pragma once
// The explorer's SP hook: samples chunks on a sequence-parallel group of rank processes kept by
// a node scheduler (services/node/node_scheduler.hpp) instead of in-process.
//
// operator()(version, prompts, seeds, sampler) is equivalent to:
//   if version != loaded: every rank loads policy's weights (shared memory), loaded = version
//   result = node.sample(...)   // a lost member -> regroup from survivors/spares, retried
//   if result.regroups > 0: node.replenish()   // replacement ranks copy weights from a peer
//   return policy.latents_to_images(result.latents)
// so a member SIGKILLed mid-chunk costs a regroup, not the chunk's leases. Thread-compatible.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/config/config.hpp"
#include "common/metrics/metrics.hpp"
#include "common/sampler/sampler_options.hpp"
#include "common/task/image.hpp"
#include "common/task/prompt.hpp"

namespace spotlight::policy {
class Policy;
}  // namespace spotlight::policy
namespace spotlight::node {
class NodeScheduler;
}  // namespace spotlight::node

namespace spotlight::explorer {

struct SpSamplerOptions {
  int size = 1;    // SP group size (> 1 to use this)
  int spares = 1;  // extra ranks kept warm for regrouping
  std::chrono::milliseconds op_timeout{5000};
  std::filesystem::path rank_binary;  // spotlight-node
  int threads_per_rank = 1;
  std::string preset = "tiny";  // the policy's (model.preset, model.device)
  std::string device = "cpu";
};

// explorer.sp.* of the run configuration; nullopt when explorer.sp.size is 1. An empty
// rank_binary resolves to ../node/spotlight-node next to the running executable.
std::optional<SpSamplerOptions> sp_sampler_options(const config::Config& config);

class SpSampler {
 public:
  // Starts the node's rank processes (`policy` supplies preset, device and weights; it and
  // `registry`, service "explorer", must outlive the sampler).
  SpSampler(const SpSamplerOptions& options, policy::Policy& policy, metrics::Registry& registry);
  ~SpSampler();

  std::vector<task::Image> operator()(std::int64_t version,
                                      const std::vector<task::Prompt>& prompts,
                                      const std::vector<std::uint64_t>& seeds,
                                      const sampler::SamplerOptions& sampler);

  node::NodeScheduler& node() { return *node_; }

 private:
  policy::Policy& policy_;
  std::unique_ptr<node::NodeScheduler> node_;
  std::optional<std::int64_t> loaded_;
};

}  // namespace spotlight::explorer
