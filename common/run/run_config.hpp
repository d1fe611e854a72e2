#pragma once
// One configuration schema for a run, shared by the trainer, planner and explorers, so a single
// YAML file describes the whole job (sections run, model, task, sampler, exploration, trainer,
// validation, audit, redis, bus, reward, explorer, planner, metrics). Every binary validates the
// whole file at start: an unknown key anywhere is an error naming it. The reward.* keys are the
// reward service's client keys (common/reward/remote_reward.hpp); the service itself, which
// needs none of the training keys, has its own schema of server keys (services/reward).

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/config/config.hpp"
#include "common/config/schema.hpp"
#include "common/outage/backoff.hpp"
#include "common/policy/policy_options.hpp"
#include "common/queue/lease_queue.hpp"
#include "common/redis/client.hpp"
#include "common/run/cost_section.hpp"
#include "common/run/exploration_config.hpp"
#include "common/run/model_config.hpp"
#include "common/run/run_keys.hpp"
#include "common/sampler/sampler_options.hpp"
#include "common/store/trajectory_store.hpp"
#include "common/task/options.hpp"
#include "common/task/prompt_source.hpp"
#include "common/task/task_config.hpp"

namespace spotlight::bus {
struct PublisherOptions;  // common/bus/publisher.hpp
}  // namespace spotlight::bus

namespace spotlight::run {

// The run's part of the job's schema: the run's own keys (run.*) and the sections every service
// shares (model_config.hpp, exploration_config.hpp, the task's, the reward client's, metrics.*).
// The whole job's schema, with each service's own section, is job::run_schema()
// (services/job/job_schema.hpp).
const config::Schema& run_schema();

// sampler.*: the rollout sampler (SDE) of the run.
const config::Schema& sampler_schema();
sampler::SamplerOptions sampler_options(const config::Config& config);

// redis.*: the run's Redis and the back-off while it is unavailable.
const config::Schema& redis_schema();
// Host, port and db from the config; user and password from SPOTLIGHT_REDIS_USER/PASSWORD.
redis::RedisOptions redis_options(const config::Config& config);
// The back-off while Redis is unavailable: redis.retry_initial_ms doubling to redis.retry_max_ms.
outage::BackoffOptions redis_backoff(const config::Config& config);

// bus.*: the trainer's notice bus (bus_subscription.hpp: the subscribers' side).
const config::Schema& bus_schema();
// The trainer's notice publisher: bus.max_message_bytes (ZMQ_MAXMSGSIZE),
// bus.handshake_timeout_ms and CURVE from bus.curve.server_secret_file. Throws config::ConfigError
// naming a key file that is unusable.
bus::PublisherOptions trainer_bus_options(const config::Config& config);

// Whether explorers keep the image of a candidate of (iteration, prompt) for the trainer's
// exploration sample: prompt 0 of every `every`-th iteration (0: never).
bool samples_explored_images(std::int64_t iteration, std::int64_t prompt, int every);

// key_prefix RunKeys::explore_queue, exploration.lease_timeout_ms and max_deliveries.
queue::LeaseQueueOptions explore_queue_options(const config::Config& config);
// key_prefix RunKeys::trajectories, ttl exploration.trajectory_ttl_seconds.
store::TrajectoryStoreOptions trajectory_store_options(const config::Config& config);

}  // namespace spotlight::run
