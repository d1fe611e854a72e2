#include "common/run/run_config.hpp"

#include "common/metrics/server.hpp"
#include "common/reward/remote_reward.hpp"

namespace spotlight::run {

using config::Entry;

namespace {

// run.*: the run's own keys.
const config::Schema& run_keys_schema() {
  static const config::Schema schema{
      Entry::string("run.dir", "runs/default", "Run directory: checkpoints, metrics, summary.")
          .non_empty(),
      Entry::integer("run.seed", 0,
                     "Run seed: prompts, candidate seeds and rollouts derive from it.")
          .at_least(0),
      Entry::integer("run.threads", 0, "Intra-op CPU threads (0: LibTorch's default).").at_least(0),
      Entry::string("run.id", "default",
                    "Run id: every Redis key of the run is under spotlight:<run.id>.")
          .non_empty(),
  };
  return schema;
}

}  // namespace

const config::Schema& run_schema() {
  static const config::Schema schema = [] {
    config::Schema s = run_keys_schema();
    s.add(model_schema())
        .add(task::prompts_schema())
        .add(task::scoring_schema())
        .add(sampler_schema())
        .add(exploration_schema())
        .add(redis_schema())
        .add(bus_schema())
        // The reward service's client keys (reward.*), which a core-only build reads too
        // (reward.input, and reward.endpoint to refuse a prompt file it cannot score).
        .add(reward::remote_reward_schema());
#ifdef SPOTLIGHT_RUN_SERVICES
    // metrics.bind (empty: off), metrics.max_request_bytes, metrics.request_timeout_ms. A
    // core-only build (SPOTLIGHT_CORE_ONLY) serves no metrics: no metrics.* keys.
    s.add(metrics::metrics_schema(""));
#endif
    return s;
  }();
  return schema;
}

const config::Schema& sampler_schema() {
  static const config::Schema schema{
      Entry::integer("sampler.steps", 10, "SDE/ODE steps per sample.").range(2, 1000),
      Entry::real("sampler.noise_level", 0.7, "SDE noise level a.").range(0, 5),
      Entry::real("sampler.shift", 1.0, "Time-grid shift toward the noise end.").positive(),
  };
  return schema;
}

sampler::SamplerOptions sampler_options(const config::Config& c) {
  sampler::SamplerOptions o;
  o.steps = c.get<int>("sampler.steps");
  o.noise_level = c.get_double("sampler.noise_level");
  o.shift = c.get_double("sampler.shift");
  return o;
}

// The lease queue lives in Redis: not part of a core-only build.
#ifdef SPOTLIGHT_RUN_SERVICES
bool samples_explored_images(std::int64_t iteration, std::int64_t prompt, int every) {
  return every > 0 && prompt == 0 && iteration >= 0 && iteration % every == 0;
}

queue::LeaseQueueOptions explore_queue_options(const config::Config& c) {
  queue::LeaseQueueOptions o;
  o.key_prefix = RunKeys(c.get_string("run.id")).explore_queue;
  const ExplorationOptions exploration = exploration_options(c);
  o.lease_timeout = exploration.lease_timeout;
  o.max_deliveries = exploration.max_deliveries;
  return o;
}
#endif

store::TrajectoryStoreOptions trajectory_store_options(const config::Config& c) {
  store::TrajectoryStoreOptions o;
  o.key_prefix = RunKeys(c.get_string("run.id")).trajectories;
  o.ttl = exploration_options(c).trajectory_ttl;
  return o;
}

}  // namespace spotlight::run
