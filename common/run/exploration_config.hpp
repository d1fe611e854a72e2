#pragma once
// The run's exploration.* section: how seeds are explored (exploration.mode), which explored
// trajectories the trainer reuses, how candidates are spread over prompts, and the lease queue
// and trajectory store the services share. Read once into ExplorationOptions; the closed choices
// are enums (config/choice.hpp), so no reader compares their text.

#include <chrono>
#include <string_view>

#include "common/config/choice.hpp"
#include "common/config/config.hpp"
#include "common/config/schema.hpp"

namespace spotlight::run {

// exploration.mode: where seed exploration runs.
enum class ExplorationMode {
  kNone,       // random seeds
  kSync,       // on the trainer, current weights
  kSyncStale,  // on the trainer, the previous iteration's weights
  kAsync,      // explorers, previous weights (planner, explorers, Redis)
  kOffload,    // no exploration: explorers sample the rollouts with the current weights
};
inline constexpr config::Choice<ExplorationMode> kExplorationModes[] = {
    {"none", ExplorationMode::kNone},
    {"sync", ExplorationMode::kSync},
    {"sync-stale", ExplorationMode::kSyncStale},
    {"async", ExplorationMode::kAsync},
    {"offload", ExplorationMode::kOffload},
};
// "none", "sync", "sync-stale", "async", "offload" (the config's names).
std::string_view to_string(ExplorationMode mode);
// Whether the mode needs the services (Redis, reward service, planner, explorers): async, offload.
bool needs_services(ExplorationMode mode);
// Whether the trainer samples from weights older than the current ones: async, sync-stale.
bool explores_stale_weights(ExplorationMode mode);

// exploration.reuse: which explored trajectories the trainer trains on instead of sampling.
enum class Reuse {
  kOff,        // none: every rollout is sampled by the trainer
  kOnPolicy,   // those sampled with the trainer's current weights at the rollout's step count
  kOffPolicy,  // also those sampled with older weights, with the importance ratio against them
};
inline constexpr config::Choice<Reuse> kReuses[] = {
    {"off", Reuse::kOff},
    {"on_policy", Reuse::kOnPolicy},
    {"off_policy", Reuse::kOffPolicy},
};

// exploration.allocation: how candidates are spread over an iteration's prompts.
enum class Allocation {
  kFixed,     // N each
  kAdaptive,  // by each prompt's Beta posterior of success (exploration.adaptive_cap)
};
inline constexpr config::Choice<Allocation> kAllocations[] = {
    {"fixed", Allocation::kFixed},
    {"adaptive", Allocation::kAdaptive},
};

// planner.policy: how much to explore per iteration.
enum class PlannerPolicy {
  kFixed,     // exploration.candidates and exploration.steps
  kBandit,    // a UCB arm of planner.candidates x planner.steps
  kDeadline,  // the widest arm that finishes in time with planner.finish_probability
};
inline constexpr config::Choice<PlannerPolicy> kPlannerPolicies[] = {
    {"fixed", PlannerPolicy::kFixed},
    {"bandit", PlannerPolicy::kBandit},
    {"deadline", PlannerPolicy::kDeadline},
};

struct ExplorationOptions {
  ExplorationMode mode = ExplorationMode::kSync;
  Reuse reuse = Reuse::kOnPolicy;
  int candidates = 24;  // N per prompt
  int steps = 0;        // sampler steps of exploration; 0: sampler.steps
  Allocation allocation = Allocation::kFixed;
  int adaptive_cap = 3;
  double contrast_target = 0.02;
  int sample_images_every = 5;   // async: explored images kept every this many iterations
  double max_wait_seconds = 60;  // async: the trainer's longest wait for explored seeds
  std::chrono::milliseconds trajectory_ttl{600000};
  std::chrono::milliseconds lease_timeout{30000};
  int max_deliveries = 5;
  PlannerPolicy policy = PlannerPolicy::kFixed;  // planner.policy (fixed with offload)
};

// Every exploration.* key and planner.policy.
const config::Schema& exploration_schema();
// Throws config::ConfigError naming planner.policy when it is not fixed with offload.
ExplorationOptions exploration_options(const config::Config& config);

}  // namespace spotlight::run
