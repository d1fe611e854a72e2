#include "common/run/exploration_config.hpp"

#include <cstdint>

namespace spotlight::run {

using config::Entry;

std::string_view to_string(ExplorationMode mode) {
  return config::name_of(kExplorationModes, mode);
}

bool needs_services(ExplorationMode mode) {
  return mode == ExplorationMode::kAsync || mode == ExplorationMode::kOffload;
}

bool explores_stale_weights(ExplorationMode mode) {
  return mode == ExplorationMode::kAsync || mode == ExplorationMode::kSyncStale;
}

const config::Schema& exploration_schema() {
  static const config::Schema schema{
      Entry::string("exploration.mode", "sync",
                    "Where seed exploration runs: none (random seeds), sync (on the trainer, "
                    "current weights), sync-stale (on the trainer, the previous iteration's "
                    "weights), async (explorers, previous weights), offload (no exploration: "
                    "explorers sample the rollouts with the current weights, the trainer trains).")
          .one_of(config::names(kExplorationModes)),
      Entry::string("exploration.reuse", "on_policy",
                    "Explored trajectories the trainer trains on instead of sampling them again: "
                    "off, on_policy (sampled with the current weights at the rollout's step "
                    "count), off_policy (also older weights, with the importance ratio; explorers "
                    "keep trajectories in Redis). offload always trains on the explorers'.")
          .one_of(config::names(kReuses)),
      Entry::real("exploration.trajectory_ttl_seconds", 600,
                  "Kept trajectories expire from Redis this long after they were written.")
          .range(1, 604800),
      Entry::integer("exploration.candidates", 24, "Candidate seeds explored per prompt (N).")
          .range(1, 4096),
      Entry::integer("exploration.steps", 0, "Sampler steps of exploration (0: sampler.steps).")
          .range(0, 1000),
      Entry::integer("exploration.sample_images_every", 5,
                     "async: every this many iterations explorers keep the images of prompt 0's "
                     "candidates and the trainer draws what selection chose from them "
                     "(<run.dir>/exploration/; 0: never).")
          .at_least(0),
      Entry::real("exploration.max_wait_seconds", 60,
                  "async: longest the trainer waits for an iteration's explored seeds.")
          .at_least(0),
      Entry::integer("exploration.lease_timeout_ms", 30000,
                     "A seed task's lease expires after this idle time.")
          .range(10, 86400000),
      Entry::integer("exploration.max_deliveries", 5,
                     "Deliveries before a seed task is dead-lettered.")
          .range(1, 1000),
      Entry::string("exploration.allocation", "fixed",
                    "How candidates are spread over an iteration's prompts: fixed (N each) or "
                    "adaptive (ordered by each prompt's Beta posterior of success; a prompt "
                    "whose best G rewards reach exploration.contrast_target stops being "
                    "explored and the pool moves on to prompts still all alike).")
          .one_of(config::names(kAllocations)),
      Entry::integer("exploration.adaptive_cap", 3,
                     "adaptive: a prompt may get up to this many times the N the policy "
                     "decided; the iteration still explores P x N samples in all.")
          .range(1, 64),
      Entry::real("exploration.contrast_target", 0.02,
                  "adaptive: the best-G reward variance at which a prompt is explored enough.")
          .positive(),
      // The planner's policy is part of the run's exploration: the trainer refuses one that
      // contradicts exploration.mode.
      Entry::string("planner.policy", "fixed",
                    "How much to explore per iteration: fixed (exploration.candidates and "
                    "exploration.steps), bandit (a UCB arm of planner.candidates x "
                    "planner.steps per iteration, within the predicted training time) or "
                    "deadline (the widest arm that finishes before the trainer needs it with "
                    "probability planner.finish_probability).")
          .one_of(config::names(kPlannerPolicies)),
  };
  return schema;
}

ExplorationOptions exploration_options(const config::Config& c) {
  ExplorationOptions o;
  o.mode = config::get_choice(c, "exploration.mode", kExplorationModes);
  o.reuse = config::get_choice(c, "exploration.reuse", kReuses);
  o.candidates = c.get<int>("exploration.candidates");
  o.steps = c.get<int>("exploration.steps");
  o.allocation = config::get_choice(c, "exploration.allocation", kAllocations);
  o.adaptive_cap = c.get<int>("exploration.adaptive_cap");
  o.contrast_target = c.get_double("exploration.contrast_target");
  o.sample_images_every = c.get<int>("exploration.sample_images_every");
  o.max_wait_seconds = c.get_double("exploration.max_wait_seconds");
  o.trajectory_ttl = std::chrono::milliseconds(
      static_cast<std::int64_t>(c.get_double("exploration.trajectory_ttl_seconds") * 1000.0));
  o.lease_timeout = std::chrono::milliseconds(c.get_int("exploration.lease_timeout_ms"));
  o.max_deliveries = c.get<int>("exploration.max_deliveries");
  o.policy = config::get_choice(c, "planner.policy", kPlannerPolicies);
  if (o.mode == ExplorationMode::kOffload && o.policy != PlannerPolicy::kFixed) {
    throw config::ConfigError("planner.policy",
                              "config: 'planner.policy' must be fixed with exploration.mode "
                              "offload (it explores nothing: the planner enqueues the rollouts)");
  }
  return o;
}

}  // namespace spotlight::run
