#pragma once
// What a deployment adds around `train` and `validate` (commands.hpp). The services build
// (app.hpp) brings exploration.mode async and offload (explorers' results and trajectories through
// Redis, the weights published for them), the /metrics endpoint, cost accounting, validation
// grids, exploration samples and the run report; the compute core alone (SPOTLIGHT_CORE_ONLY)
// trains with NoTrainHooks. run_train calls them in this order:
//
//   check at start: core_mode(mode), or hooks.supports(mode)             // else ConfigError
//   seeds = core_mode(mode) ? the core's : hooks.seed_source(options, exploration, policy, stop)
//   hooks.prepare(options, policy)
//   seeds = hooks.wrap_seeds(seeds)
//   trainer.set_observer(hooks.observer())
//   trainer.resume(); hooks.started(next_iteration)
//   for every report r, the base model's validation (iteration -1) first:
//     hooks.observed(r)
//     if r.iteration >= 0: hooks.iteration_done(r, exploration seconds on the critical path so far)
//   an exception e out of the training loop: exit with hooks.failed(e, next iteration), or rethrow
//   hooks.summarize(summary)                                               // then summary.json
//   hooks.finished(run dir)
// With trainer.ranks > 1 only rank 0 calls the above; every other rank calls
// prepare_rank(options, rank) and rank_observed(r) for each of its iterations.
// and, for task.kind prompt_file (train and eval), hooks.remote_reward(config) before the trainer.
// run_validate calls hooks.validating(options, policy), hooks.validated(r) for each validated
// weights version (r.iteration = version - 1, r.validation set), then hooks.finished(run dir).
//
// All calls come from the thread that runs run_train.

#include <cstdint>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "common/config/config.hpp"
#include "common/reward/reward_function.hpp"
#include "services/trainer/grpo_trainer.hpp"
#include "services/trainer/seed_source.hpp"

namespace spotlight::trainer {

class TrainHooks {
 public:
  virtual ~TrainHooks() = default;
  // Whether seed_source() provides exploration.mode `mode` (one the core does not: async,
  // offload).
  virtual bool supports(run::ExplorationMode mode) const { return false; }
  // `exploration` holds the core's settings (reuse, the trained step window); `policy` outlives
  // the result.
  virtual std::unique_ptr<SeedSource> seed_source(const GrpoOptions& options,
                                                  const ExplorationOptions& exploration,
                                                  policy::Policy& policy, std::stop_token stop) {
    return nullptr;
  }
  // `policy` outlives the hooks' use of it (until run_train returns).
  virtual void prepare(const GrpoOptions& options, policy::Policy& policy) {}
  // The seed source the trainer uses: `seeds` or a decorator around it.
  virtual std::unique_ptr<SeedSource> wrap_seeds(std::unique_ptr<SeedSource> seeds) {
    return seeds;
  }
  // Sees every checkpointed weights version; may be null. Must outlive run_train's trainer.
  virtual TrainerObserver* observer() { return nullptr; }
  virtual void started(int64_t next_iteration) {}
  virtual void observed(const IterationReport& report) {}
  // trainer.ranks > 1, ranks other than 0: instead of prepare() (and of everything else here,
  // which only rank 0 calls), then rank_observed() for each of this rank's iterations.
  virtual void prepare_rank(const GrpoOptions& options, int rank) {}
  virtual void rank_observed(const IterationReport& report) {}
  virtual void iteration_done(const IterationReport& report, double explore_seconds) {}
  // The exit code for a failure the hooks' own parts raised (a Redis outage past its limit);
  // nullopt: not theirs.
  virtual std::optional<int> failed(const std::exception& error, int64_t next_iteration) {
    return std::nullopt;
  }
  virtual void summarize(nlohmann::json& summary) {}
  // summary.json (train) or validation.jsonl (validate) is written; what is left to write.
  virtual void finished(const std::filesystem::path& run_dir) {}
  // validate: before the first deferred weights version is scored, then after each.
  virtual void validating(const GrpoOptions& options, policy::Policy& policy) {}
  virtual void validated(const IterationReport& report) {}
  // The reward service's client, for task.kind prompt_file (train and eval: a prompt file's
  // prompts are scored by the reward service alone); null where this build has none.
  virtual std::unique_ptr<reward::RewardFunction> remote_reward(const config::Config& config) {
    return nullptr;
  }
};

// The compute core alone: exploration.mode none or sync, nothing around it.
class NoTrainHooks final : public TrainHooks {};

}  // namespace spotlight::trainer
