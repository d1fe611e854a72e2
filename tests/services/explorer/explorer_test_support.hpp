#pragma once
// Helpers shared by the explorer tests: micro-preset policies with perturbed weights (the fresh
// model's zero-initialised output layers give featureless images), seed tasks of the run's
// schedule, and the in-process reference the explorer's results must reproduce.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/policy/policy.hpp"
#include "common/queue/lease_queue.hpp"
#include "common/redis/client.hpp"
#include "common/reward/reward_function.hpp"
#include "common/run/task_checks.hpp"
#include "common/run/task_signature.hpp"
#include "common/sampler/sampler.hpp"
#include "common/wire/messages.hpp"

namespace spotlight::explorer::testing {

inline constexpr std::uint64_t kRunSeed = 7;

// Micro preset on the CPU; `perturbation` > 0 adds N(0, perturbation^2) noise seeded by
// `seed` to every parameter.
std::unique_ptr<policy::Policy> micro_policy(std::uint64_t seed, double perturbation = 0.05);

// Mean red channel, clamped to [0, 1]: dense, so any difference in the image shows.
class DenseReward final : public reward::RewardFunction {
 public:
  std::vector<reward::Scored> score(const std::vector<task::Prompt>& prompts,
                                    const std::vector<task::Image>& images) override;
  std::string name() const override { return "dense-red"; }
};

struct TaskSpec {
  std::string id;
  wire::SeedTask task;
};

// Tasks of iteration `iteration`: `prompts` prompts of the run's schedule x `candidates` seeds,
// each asking for `weights_version` and `steps` sampler steps. Task options: the micro preset's.
std::vector<TaskSpec> seed_tasks(const std::string& run_id, std::int64_t iteration, int prompts,
                                 int candidates, std::int64_t weights_version, int steps);

// The run's task key as the planner would make it: $SPOTLIGHT_TASK_KEY, else the run-local key in
// the run's store on `redis` (created if absent), which explorers there find by themselves.
run::TaskKey run_task_key(const redis::RedisOptions& redis, const std::string& run_id);

// Limits that admit every task seed_tasks() makes for `run_id` (up to 64 prompts, candidates,
// iterations and 1000 steps).
run::TaskLimits limits(const std::string& run_id);

// Enqueues every task (in order), signed with `key`; returns how many were new.
std::int64_t enqueue(queue::LeaseQueue& queue, const std::vector<TaskSpec>& tasks,
                     const run::TaskKey& key);

// Rewards of sampling `tasks` in order with `policy` in chunks of `chunk` (the explorer's batch
// composition), scored by `reward`.
std::vector<double> reference_rewards(policy::Policy& policy, const std::vector<TaskSpec>& tasks,
                                      int chunk, reward::RewardFunction& reward,
                                      const sampler::SamplerOptions& sampler = {});

}  // namespace spotlight::explorer::testing
