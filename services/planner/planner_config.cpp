#include "services/planner/planner_config.hpp"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/bus/follower_thread.hpp"
#include "common/config/error.hpp"
#include "common/queue/redis_lease_queue.hpp"
#include "common/run/bus_subscription.hpp"
#include "common/run/run_config.hpp"
#include "common/store/redis_key_value_store.hpp"
#include "services/planner/redis_explorer_directory.hpp"

namespace spotlight::planner {

PlannerOptions planner_options(const config::Config& c) {
  const run::ExplorationOptions exploration = run::exploration_options(c);
  PlannerOptions o;
  o.run_id = c.get_string("run.id");
  o.run_seed = c.get<std::uint64_t>("run.seed");
  o.iterations = c.get_int("trainer.iterations");
  o.prompts_per_iteration = c.get<int>("trainer.prompts_per_iteration");
  o.offload = exploration.mode == run::ExplorationMode::kOffload;
  o.lookahead = o.offload ? 0 : c.get<int>("planner.lookahead");
  o.keep_trajectories = o.offload || exploration.reuse == run::Reuse::kOffPolicy;
  o.rollout_steps = c.get<int>("sampler.steps");
  o.trained = rollout::trained_steps(o.rollout_steps, c.get<int>("trainer.train_step_begin"),
                                     c.get<int>("trainer.train_step_end"));
  o.poll_interval = std::chrono::milliseconds(c.get_int("planner.poll_ms"));
  o.max_backoff =
      std::max(std::chrono::milliseconds(c.get_int("redis.retry_max_ms")), o.poll_interval);
  o.max_wait =
      std::chrono::milliseconds(static_cast<std::int64_t>(exploration.max_wait_seconds * 1000.0));
  o.heartbeat_period = std::chrono::milliseconds(c.get_int("explorer.heartbeat_ms"));
  o.task = task::task_options(c);
  o.prompts = run::prompt_source(c);
  o.adaptive = exploration.allocation == run::Allocation::kAdaptive && !o.offload;
  o.adaptive_cap = exploration.adaptive_cap;
  o.purge_passed = c.get_bool("planner.purge_passed");
  o.allocation.group_size = c.get<int>("trainer.group_size");
  o.allocation.contrast_target = exploration.contrast_target;
  o.finish_probability = c.get_double("planner.finish_probability");
  o.allocation.probability = o.finish_probability;
  o.finish.preemption_delay_seconds = c.get_double("planner.preemption_delay_seconds");
  o.decisions_file = c.get_string("planner.decisions_file");
  if (o.decisions_file.empty()) {
    o.decisions_file = (std::filesystem::path(c.get_string("run.dir")) / "planner.jsonl").string();
  }
  return o;
}

namespace {

// The arms' axes (planner.candidates, planner.steps), which both arm policies read.
std::vector<int> int_list(const config::Config& c, const std::string& key) {
  std::vector<int> out;
  for (double x : c.get_double_list(key))
    out.push_back(static_cast<int>(x));
  return out;
}

}  // namespace

exploration::BanditOptions bandit_options(const config::Config& c) {
  exploration::BanditOptions o;
  o.candidates = int_list(c, "planner.candidates");
  o.steps = int_list(c, "planner.steps");
  o.group_size = c.get<int>("trainer.group_size");
  o.time_margin = c.get_double("planner.time_margin");
  o.exploration = c.get_double("planner.ucb_exploration");
  o.discount = c.get_double("planner.ucb_discount");
  if (const double prior = c.get_double("planner.prior_sample_step_seconds"); prior > 0) {
    o.prior_seconds_per_sample_step = prior;
  }
  return o;
}

exploration::DeadlineOptions deadline_options(const config::Config& c) {
  exploration::DeadlineOptions o;
  o.candidates = int_list(c, "planner.candidates");
  o.steps = int_list(c, "planner.steps");
  o.group_size = c.get<int>("trainer.group_size");
  o.probability = c.get_double("planner.finish_probability");
  return o;
}

std::unique_ptr<exploration::ExplorationPolicy> exploration_policy(const config::Config& c) {
  // exploration_options refuses a policy other than fixed with offload.
  switch (run::exploration_options(c).policy) {
    case run::PlannerPolicy::kBandit:
      return std::make_unique<exploration::BanditExplorationPolicy>(bandit_options(c));
    case run::PlannerPolicy::kDeadline:
      return std::make_unique<exploration::DeadlineExplorationPolicy>(deadline_options(c));
    case run::PlannerPolicy::kFixed:
      break;
  }
  return std::make_unique<exploration::FixedExplorationPolicy>(fixed_exploration(c));
}

exploration::ExplorationDecision fixed_exploration(const config::Config& c) {
  const run::ExplorationOptions exploration = run::exploration_options(c);
  const int rollout_steps = c.get<int>("sampler.steps");
  exploration::ExplorationDecision d;
  if (exploration.mode == run::ExplorationMode::kOffload) {
    // The rollouts themselves: G seeds per prompt at the rollout's step count, no selection.
    d.candidates = c.get<int>("trainer.group_size");
    d.steps = rollout_steps;
    return d;
  }
  d.candidates = exploration.candidates;
  d.steps = exploration.steps > 0 ? exploration.steps : rollout_steps;
  return d;
}

std::unique_ptr<Planner> make_planner(const config::Config& c,
                                      std::shared_ptr<metrics::Registry> registry) {
  const run::RunKeys keys(c.get_string("run.id"));
  const redis::RedisOptions redis = run::redis_options(c);
  PlannerParts parts;
  parts.queue = std::make_unique<queue::RedisLeaseQueue>(redis, run::explore_queue_options(c));
  parts.store = std::make_unique<store::RedisKeyValueStore>(redis, keys.prefix);
  const PlannerOptions options = planner_options(c);
  if (c.get_bool("planner.reap_dead_explorers")) {  // the fast path for SIGKILLed explorers
    parts.directory = std::make_unique<RedisExplorerDirectory>(
        redis, keys, run::explore_queue_options(c),
        options.heartbeat_period * options.dead_heartbeats);
  }
  parts.policy = exploration_policy(c);
  if (auto bus = run::bus_subscription(c)) {
    // Iteration events wake the loop; the pass itself reads the trainer's progress from Redis, so
    // the follower needs no snapshot of its own (a lost event costs one planner.poll_ms).
    auto events = std::make_shared<bus::FollowerThread>(
        bus->subscriber, bus->endpoint, std::vector<std::string>{"iteration"},
        [](const std::string&) { return std::optional<bus::Notice>(); }, [](const bus::Notice&) {},
        bus->follower);
    auto seen = std::make_shared<std::uint64_t>(0);
    parts.wait_for_event = [events, seen](std::chrono::milliseconds timeout, std::stop_token stop) {
      *seen = events->wait_newer(*seen, timeout, std::move(stop));
    };
  }
  return std::make_unique<Planner>(options, keys, std::move(parts), std::move(registry));
}

}  // namespace spotlight::planner
