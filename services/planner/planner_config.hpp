#pragma once
// The planner built from the run configuration (common/run's run_schema(): one YAML per run).
//
//   run.id, run.seed, trainer.iterations, trainer.prompts_per_iteration, planner.lookahead,
//   planner.poll_ms, exploration.max_wait_seconds, explorer.heartbeat_ms, task.*  -> PlannerOptions
//   exploration.candidates, exploration.steps (0: sampler.steps)   -> FixedExplorationPolicy
//   planner.policy=bandit: planner.{candidates,steps,time_margin,ucb_exploration,ucb_discount,
//     prior_sample_step_seconds}, trainer.group_size             -> BanditExplorationPolicy
//   planner.policy=deadline: planner.{candidates,steps,finish_probability}, trainer.group_size
//                                                                 -> DeadlineExplorationPolicy
//   exploration.allocation=adaptive, exploration.contrast_target, planner.finish_probability,
//     planner.preemption_delay_seconds                            -> PlannerOptions
//   planner.decisions_file (default: <run.dir>/planner.jsonl)
//   exploration.mode=offload: lookahead 0, G = trainer.group_size seeds per prompt at
//     sampler.steps, exactly the current weights (planner.policy must be fixed)
//   exploration.reuse=off_policy (or offload): tasks at sampler.steps keep the trained steps
//     (trainer.train_step_begin / end) of their trajectories
//   redis.*, exploration.lease_timeout_ms, exploration.max_deliveries -> queue, store, directory

#include <memory>

#include "common/config/config.hpp"
#include "common/exploration/bandit_policy.hpp"
#include "common/exploration/deadline_policy.hpp"
#include "common/exploration/exploration_policy.hpp"
#include "common/metrics/metrics.hpp"
#include "services/planner/planner.hpp"

namespace spotlight::planner {

PlannerOptions planner_options(const config::Config& config);
// The fixed policy's decision: exploration.candidates, exploration.steps or sampler.steps
// (offload: trainer.group_size at sampler.steps).
exploration::ExplorationDecision fixed_exploration(const config::Config& config);
exploration::BanditOptions bandit_options(const config::Config& config);
exploration::DeadlineOptions deadline_options(const config::Config& config);
// The policy planner.policy names.
std::unique_ptr<exploration::ExplorationPolicy> exploration_policy(const config::Config& config);
// A planner on the run's Redis (connects on first use). `registry` may be null.
std::unique_ptr<Planner> make_planner(const config::Config& config,
                                      std::shared_ptr<metrics::Registry> registry);

}  // namespace spotlight::planner
