#pragma once
// One configuration schema for a run, shared by the trainer, planner and explorers, so a single
// YAML file describes the whole job (sections run, model, task, sampler, exploration, trainer,
// validation, audit, redis, bus, reward, explorer, planner, metrics). Every binary validates the
// whole file at start: an unknown key anywhere is an error naming it. The reward service, which
// needs none of the training keys, has its own schema (services/reward).

#include <chrono>
#include <memory>
#include <string>

#include "common/config/config.hpp"
#include "common/config/schema.hpp"
#include "common/outage/backoff.hpp"
#include "common/policy/policy_options.hpp"
#include "common/queue/lease_queue.hpp"
#include "common/redis/client.hpp"
#include "common/sampler/sampler_options.hpp"
#include "common/task/options.hpp"
#include "common/task/prompt_source.hpp"

namespace spotlight::bus {
struct PublisherOptions;  // common/bus/publisher.hpp
}  // namespace spotlight::bus
namespace spotlight::zmqio {
struct CurveOptions;  // common/zmq/curve.hpp
}  // namespace spotlight::zmqio

namespace spotlight::run {

const config::Schema& run_schema();

// Throws config::ConfigError naming the key when the model, task and reward keys do not fit
// together: model.kind torchscript <=> task.kind prompt_file (with model.path, both task files and
// reward.endpoint), reward.input latents needs reward.endpoint, no SP with torchscript.
void check_model_config(const config::Config& config);
// The model of the run (check_model_config first).
policy::PolicyOptions policy_options(const config::Config& config);
// Where the run's prompts come from: the embedded generator (task.kind embedded) or the prompt
// file (prompt_file; throws config::ConfigError naming task.prompts_file when it is unusable).
std::unique_ptr<task::PromptSource> prompt_source(const config::Config& config);
task::TaskOptions task_options(const config::Config& config);
// The rollout sampler (SDE) of the run.
sampler::SamplerOptions sampler_options(const config::Config& config);
// Host, port and db from the config; user and password from SPOTLIGHT_REDIS_USER/PASSWORD.
redis::RedisOptions redis_options(const config::Config& config);
// The back-off while Redis is unavailable: redis.retry_initial_ms doubling to redis.retry_max_ms.
outage::BackoffOptions redis_backoff(const config::Config& config);

// The trainer's notice publisher: bus.max_message_bytes (ZMQ_MAXMSGSIZE),
// bus.handshake_timeout_ms and CURVE from bus.curve.server_secret_file. Throws config::ConfigError
// naming a key file that is unusable.
bus::PublisherOptions trainer_bus_options(const config::Config& config);
// CURVE of the reward service's clients: reward.curve.server_public_file (empty: plain text) and
// reward.curve.client_secret_file (empty: an ephemeral key pair). Throws config::ConfigError.
zmqio::CurveOptions reward_client_curve(const config::Config& config);

// Redis key layout of one run: everything durable lives under `prefix` = "spotlight:<run.id>".
// Construct the stores with it: RedisKeyValueStore(redis, keys.prefix) and the keys below are
// relative to it (the store adds "<prefix>:"); RedisWeightStore with key_prefix = keys.prefix
// (it adds ":weights:"); the lease queue with key_prefix = keys.explore_queue.
struct RunKeys {
  explicit RunKeys(const std::string& run_id);
  std::string prefix;         // spotlight:<run id>
  std::string explore_queue;  // absolute: <prefix>:explore (LeaseQueueOptions::key_prefix)
  // Relative keys (KeyValueStore constructed with `prefix`):
  std::string trainer_iteration = "trainer:iteration";  // iteration the trainer works on (integer)
  std::string trainer_timing = "trainer:timing";        // JSON time split of the last iteration
  std::string planner_state = "planner:enqueued";       // highest iteration enqueued (integer)
  std::string explorer_heartbeat(
      const std::string& explorer_id) const;  // "explorer:<id>:heartbeat"
};

queue::LeaseQueueOptions explore_queue_options(const config::Config& config);

}  // namespace spotlight::run
