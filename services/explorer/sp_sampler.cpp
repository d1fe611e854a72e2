#include "services/explorer/sp_sampler.hpp"

#include <unistd.h>

#include "common/log/log.hpp"
#include "common/policy/policy.hpp"
#include "common/run/run_config.hpp"
#include "services/node/node_scheduler.hpp"

namespace spotlight::explorer {

std::optional<SpSamplerOptions> sp_sampler_options(const config::Config& config) {
  SpSamplerOptions o;
  o.size = config.get<int>("explorer.sp.size");
  if (o.size <= 1) return std::nullopt;
  o.spares = config.get<int>("explorer.sp.spares");
  o.op_timeout = std::chrono::milliseconds(config.get_int("explorer.sp.op_timeout_ms"));
  o.rank_binary = config.get_string("explorer.sp.rank_binary");
  const auto policy = run::policy_options(config);
  o.preset = policy.preset;
  o.device = policy.device;
  if (const auto threads = config.get<int>("run.threads"); threads > 0) {
    o.threads_per_rank = threads;
  }
  if (o.rank_binary.empty()) {
    std::error_code error;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
    o.rank_binary = error ? std::filesystem::path("spotlight-node")
                          : self.parent_path().parent_path() / "node" / "spotlight-node";
  }
  return o;
}

SpSampler::SpSampler(const SpSamplerOptions& options, policy::Policy& policy,
                     metrics::Registry& registry)
    : policy_(policy) {
  node::NodeOptions n;
  n.rank_binary = options.rank_binary;
  n.sp_size = options.size;
  n.ranks = options.size + options.spares;
  n.preset = options.preset;
  n.device = options.device;
  n.op_timeout = options.op_timeout;
  n.threads_per_rank = options.threads_per_rank;
  node_ = std::make_unique<node::NodeScheduler>(n, &registry);
  node_->start();
  log::info("SP group of {} on {} rank processes ({})", options.size, n.ranks,
            options.rank_binary.string());
}

SpSampler::~SpSampler() = default;

std::vector<task::Image> SpSampler::operator()(std::int64_t version,
                                               const std::vector<task::Prompt>& prompts,
                                               const std::vector<std::uint64_t>& seeds,
                                               const sampler::SamplerOptions& sampler) {
  if (loaded_ != version) {
    node_->load_weights(policy_.weights_bytes());
    loaded_ = version;
  }
  node::SampleRequest request;
  for (const auto& p : prompts)
    request.prompts.push_back(p.text());
  request.seeds = seeds;
  request.sampler = sampler;
  auto result = node_->sample(request);
  if (result.regroups > 0) {
    log::warn("SP group regrouped {} time(s) during a chunk; now generation {} of size {}",
              result.regroups, node_->generation(), node_->group_size());
    try {
      const auto copy = node_->replenish();
      if (copy.ranks > 0) {
        log::info("replaced {} rank(s): weights from {} in {:.3f} s", copy.ranks, copy.source,
                  copy.seconds);
      }
    } catch (const std::exception& e) {
      log::warn("could not replace lost ranks: {}", e.what());
    }
  }
  return policy_.latents_to_images(result.latents.to(policy_.tensor_options().device()));
}

}  // namespace spotlight::explorer
