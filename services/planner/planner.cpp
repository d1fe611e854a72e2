#include "services/planner/planner.hpp"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <fstream>
#include <limits>
#include <mutex>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock/stopwatch.hpp"
#include "common/clock/unix_time.hpp"
#include "common/exploration/bandit_policy.hpp"
#include "common/exploration/deadline_policy.hpp"
#include "common/log/log.hpp"
#include "common/outage/failure.hpp"
#include "common/queue/errors.hpp"
#include "common/run/schedule.hpp"
#include "common/run/task_checks.hpp"
#include "common/run/task_key_source.hpp"
#include "common/store/errors.hpp"
#include "common/wire/messages.hpp"

namespace spotlight::planner {
namespace {

void require(bool ok, const std::string& field, const std::string& why) {
  if (!ok) throw PlannerError("PlannerOptions." + field + ": " + why);
}

double seconds(std::chrono::milliseconds ms) {
  return static_cast<double>(ms.count()) / 1000.0;
}

// The policy's own account of its decision for iteration t: "bandit" with its arms, "deadline"
// with its budget, or "fixed".
void explain_policy(const exploration::ExplorationPolicy& policy, std::int64_t t,
                    nlohmann::json& record) {
  if (const auto* bandit = dynamic_cast<const exploration::BanditExplorationPolicy*>(&policy);
      bandit && bandit->last_choice() && bandit->last_choice()->iteration == t) {
    const exploration::BanditChoice& why = *bandit->last_choice();
    record["policy"] = "bandit";
    record["reason"] = why.reason;
    record["budget_seconds"] = why.budget_seconds;
    if (why.seconds_per_sample_step)
      record["seconds_per_sample_step"] = *why.seconds_per_sample_step;
    auto& arms = record["arms"] = nlohmann::json::array();
    for (const exploration::ArmReport& a : why.arms) {
      nlohmann::json arm{{"candidates", a.arm.candidates},
                         {"steps", a.arm.steps},
                         {"feasible", a.feasible},
                         {"pulls", a.pulls}};
      if (a.predicted_seconds) arm["predicted_seconds"] = *a.predicted_seconds;
      if (a.mean) arm["mean_reward"] = *a.mean;
      if (a.score) arm["score"] = *a.score;
      arms.push_back(std::move(arm));
    }
  } else if (const auto* deadline =
                 dynamic_cast<const exploration::DeadlineExplorationPolicy*>(&policy);
             deadline && deadline->last_choice() && deadline->last_choice()->iteration == t) {
    const exploration::DeadlineChoice& why = *deadline->last_choice();
    record["policy"] = "deadline";
    record["reason"] = why.reason;
    record["budget_seconds"] = why.budget_seconds;
  } else {
    record["policy"] = "fixed";
  }
}

}  // namespace

void PlannerOptions::validate() const {
  require(!run_id.empty(), "run_id", "must not be empty");
  require(iterations >= 1, "iterations", "must be >= 1");
  require(prompts_per_iteration >= 1, "prompts_per_iteration", "must be >= 1");
  require(lookahead >= 0, "lookahead", "must be >= 0");
  require(poll_interval.count() > 0, "poll_interval", "must be > 0");
  require(max_backoff >= poll_interval, "max_backoff", "must be >= poll_interval");
  require(max_wait.count() >= 0, "max_wait", "must be >= 0");
  require(heartbeat_period.count() > 0, "heartbeat_period", "must be > 0");
  require(dead_heartbeats >= 1, "dead_heartbeats", "must be >= 1");
  require(!offload || lookahead == 0, "lookahead",
          "must be 0 when offloading (an iteration is enqueued once its weights exist)");
  require(rollout_steps >= 1, "rollout_steps", "must be >= 1");
  require(adaptive_cap >= 1, "adaptive_cap", "must be >= 1");
  require(finish_probability > 0 && finish_probability < 1, "finish_probability",
          "must be in (0, 1)");
  try {
    allocation.validate();
    finish.validate();
  } catch (const std::invalid_argument& e) {
    throw PlannerError(std::string("PlannerOptions.") + e.what());
  }
}

namespace {

store::KeyValueStore& required_store(const PlannerParts& parts) {
  if (parts.store == nullptr) throw PlannerError("PlannerOptions.parts.store: missing");
  return *parts.store;
}

}  // namespace

Planner::Planner(PlannerOptions options, run::RunKeys keys, PlannerParts parts,
                 std::shared_ptr<metrics::Registry> registry)
    : options_(std::move(options)),
      keys_(std::move(keys)),
      parts_(std::move(parts)),
      state_(required_store(parts_), keys_),
      registry_(std::move(registry)),
      metrics_(PlannerMetrics::create(registry_)),
      queue_totals_(registry_),
      prompts_(options_.prompts ? options_.prompts
                                : std::make_shared<const task::PromptGenerator>(options_.task)),
      finish_model_((options_.validate(), options_.finish)),
      redis_("redis", registry_.get(),
             outage::BackoffOptions{options_.poll_interval, options_.max_backoff}) {
  require(parts_.queue != nullptr, "parts.queue", "missing");
  require(parts_.store != nullptr, "parts.store", "missing");
  require(parts_.policy != nullptr, "parts.policy", "missing");
  if (parts_.directory) {
    exploration::ReaperOptions reaper;
    reaper.dead_after = options_.heartbeat_period * options_.dead_heartbeats;
    reaper_ =
        std::make_unique<exploration::ExplorerReaper>(*parts_.queue, *parts_.directory, reaper);
  }
}

Planner::~Planner() = default;

Planner::TrainerTiming Planner::read_timing() {
  TrainerTiming t;
  std::optional<wire::TrainerTiming> record;
  try {
    record = state_.trainer_timing();
  } catch (const run::MalformedRunState& e) {
    // Advisory: plan without it (time budget max_wait) rather than not at all.
    log::warn("{}; planning without the trainer's timing", e.what());
    return t;
  }
  if (!record) return t;
  t.iteration = record->iteration;
  t.iteration_seconds = record->iteration_seconds;
  t.group_variance = record->group_variance;
  t.training_seconds = record->iteration_seconds - record->explore_seconds;
  return t;
}

std::chrono::milliseconds Planner::time_budget(const TrainerTiming& timing) const {
  if (timing.iteration_seconds && *timing.iteration_seconds > 0) {
    return std::chrono::milliseconds(static_cast<std::int64_t>(*timing.iteration_seconds * 1000.0));
  }
  return options_.max_wait;
}

StepOutcome Planner::step() {
  const auto progress = state_.trainer_progress();
  check_state_kept(progress);
  if (!progress) {
    if (!said_waiting_)
      log::info("waiting for the trainer ({} absent)", keys_.absolute(keys_.trainer_iteration));
    said_waiting_ = true;
    return StepOutcome::kWaitingForTrainer;
  }
  const std::optional<std::int64_t> c = progress->iteration;
  if (status_.trainer_iteration != c) {
    log::info("trainer at iteration {} of {}", *c, options_.iterations);
    status_.trainer_iteration = c;
    metrics_.trainer_iteration.set(static_cast<double>(*c));
  }
  if (progress->finished || *c >= options_.iterations) {
    // The last completions explorers parked (they may not acknowledge) are acknowledged now.
    parts_.queue->reconcile({});
    return StepOutcome::kFinished;
  }

  maybe_reap();
  const TrainerTiming timing = read_timing();
  feed_back(timing);
  purge_passed(*c);
  track_open(*c);
  reconcile_open();
  const auto planned = state_.planner_progress();
  const std::int64_t state = planned ? planned->enqueued_through : -1;
  status_.planned_through = state;
  metrics_.planned_iteration.set(static_cast<double>(state));
  // Iterations enqueued before this planner started (a restarted planner) are reconciled too.
  adopted_.erase(adopted_.begin(), adopted_.lower_bound(*c));
  for (std::int64_t t = std::max(*c, adopted_through_ + 1); t <= state; ++t) {
    adopted_through_ = t;
    if (open_.count(t)) continue;
    try {
      if (const auto record = state_.plan(t); record && record->candidates > 0)
        adopted_[t] = static_cast<int>(record->candidates);
    } catch (const run::MalformedRunState& e) {
      log::warn("{}: the tasks of iteration {} are not reconciled", e.what(), t);
    }
  }
  const std::int64_t last = std::min(*c + options_.lookahead, options_.iterations - 1);
  for (std::int64_t t = std::max(*c, state + 1); t <= last; ++t)
    plan(t, *c, timing);
  return StepOutcome::kRunning;
}

void Planner::feed_back(const TrainerTiming& timing) {
  if (!timing.iteration || *timing.iteration <= fed_back_through_) return;
  const std::int64_t k = *timing.iteration;
  fed_back_through_ = k;
  std::optional<wire::PlanRecord> record;
  try {
    record = state_.plan(k);
  } catch (const run::MalformedRunState& e) {
    log::warn("{}: no outcome to learn from for iteration {}", e.what(), k);
    return;
  }
  if (!record) return;  // planned by nobody: nothing to learn
  exploration::IterationOutcome outcome;
  outcome.iteration = k;
  outcome.decision = {static_cast<int>(record->candidates), static_cast<int>(record->steps)};
  outcome.group_variance = timing.group_variance;
  double seconds = 0;
  int samples = 0;
  std::vector<std::string> ids;
  for (int i = 0; i < options_.prompts_per_iteration && record->steps > 0; ++i) {
    for (int j = 0; j < record->candidates; ++j)
      ids.push_back(run::seed_task_id(k, i, j));
  }
  for (const auto& bytes : parts_.queue->results(ids)) {
    if (!bytes) continue;
    try {
      const auto r = wire::SeedResult::decode(*bytes);
      if (r.sample_seconds > 0) {
        const double per_step = r.sample_seconds / static_cast<double>(record->steps);
        seconds += per_step;
        ++samples;
        outcome.sample_step_seconds.push_back(per_step);
        finish_model_.observe_sample_step(per_step);
      }
    } catch (const wire::WireError&) {
      // The trainer counts malformed results; a timing sample less is all it costs here.
    }
  }
  if (samples > 0) outcome.seconds_per_sample_step = seconds / samples;
  parts_.policy->observe(outcome);
  log::info("iteration {} outcome: N={} S={}, group variance {}, {} s per sample-step ({} results)",
            k, record->candidates, record->steps,
            timing.group_variance ? std::to_string(*timing.group_variance) : "unknown",
            outcome.seconds_per_sample_step ? std::to_string(*outcome.seconds_per_sample_step)
                                            : "unknown",
            samples);
}

wire::PlanRecord Planner::decide(std::int64_t t, const exploration::IterationContext& context) {
  // A restarted planner follows the plan that exists: the trainer may have read it. One that
  // cannot be read stops the planning of t (MalformedRunState: the pass fails, is counted and
  // retried) rather than enqueueing tasks the trainer would not wait for.
  if (auto record = state_.plan(t)) return *std::move(record);
  exploration::ExplorationDecision d = parts_.policy->decide(context);
  const int budget_candidates = d.candidates;
  if (options_.adaptive && d.candidates > 0) {
    // Room for the prompts that need more; the work stays P x N (track_open() stops there).
    d.candidates = static_cast<int>(std::min<std::int64_t>(
        std::int64_t{d.candidates} * options_.adaptive_cap, run::kMaxAdaptiveCandidates));
  }
  if (d.candidates < 0 || (d.candidates > 0 && d.steps < 2)) {
    throw PlannerError("exploration policy decided candidates " + std::to_string(d.candidates) +
                       ", steps " + std::to_string(d.steps) + " for iteration " +
                       std::to_string(t));
  }
  const nlohmann::json record = decision_record(t, d, budget_candidates, context);
  const std::string text = record.dump();
  wire::PlanRecord plan{.iteration = t,
                        .candidates = d.candidates,
                        .steps = d.candidates > 0 ? d.steps : 0,
                        .budget_candidates = d.candidates > 0 ? budget_candidates : 0,
                        .reason = text};
  if (!state_.put_plan_if_absent(plan)) {
    // Another planner got there first: follow its record, which the trainer may have read.
    return decide(t, context);
  }
  if (!options_.decisions_file.empty()) {
    std::ofstream(options_.decisions_file, std::ios::app) << text << "\n";
  }
  if (record.contains("reason")) {
    log::info("iteration {}: plan N={} S={} ({}; budget {} s, {} live explorers)", t, d.candidates,
              d.steps, record["reason"].get<std::string>(), record["budget_seconds"].get<double>(),
              context.live_explorers ? std::to_string(*context.live_explorers) : "unknown");
  }
  return plan;
}

nlohmann::json Planner::decision_record(std::int64_t t, const exploration::ExplorationDecision& d,
                                        int budget_candidates,
                                        const exploration::IterationContext& context) {
  nlohmann::json record{{"iteration", t},
                        {"candidates", d.candidates},
                        {"steps", d.candidates > 0 ? d.steps : 0},
                        {"unix_ms", clock::unix_ms()},
                        {"trainer_iteration", context.trainer_iteration},
                        {"time_budget_seconds", seconds(context.time_budget)}};
  if (context.live_explorers) record["live_explorers"] = *context.live_explorers;
  if (context.training_time) record["training_seconds"] = seconds(*context.training_time);
  explain_policy(*parts_.policy, t, record);
  // The finish-time model's view of this decision, whatever the policy.
  if (const auto m = finish_model_.mean_sample_step()) {
    record["seconds_per_sample_step"] = *m;
    record["sd_seconds_per_sample_step"] = *finish_model_.sd_sample_step();
  }
  record["preemption_rate"] = finish_model_.preemption_rate();
  if (d.candidates > 0 && context.live_explorers && *context.live_explorers > 0) {
    const double budget = seconds(context.training_time.value_or(context.time_budget));
    // The work is P x the policy's N (adaptive: the cap leaves room, the budget stops at P x N).
    const exploration::ExplorationWork work{std::int64_t{context.prompts} * budget_candidates,
                                            d.steps, context.queue_depth};
    if (const auto p = finish_model_.predict(work, *context.live_explorers, budget)) {
      record["predicted_seconds"] = p->mean_seconds;
      record["predicted_sd_seconds"] = p->sd_seconds;
      record["finish_probability"] = p->probability;
    }
  }
  if (const auto k = desired_explorers(context)) record["desired_explorers"] = *k;
  if (options_.adaptive) {
    record["allocation"] = "adaptive";
    record["budget_candidates"] = budget_candidates;
  }
  return record;
}

void Planner::plan(std::int64_t t, std::int64_t c, const TrainerTiming& timing) {
  clock::Stopwatch watch;
  PlanSeconds took;
  const exploration::IterationContext context = context_for(t, c, timing);
  const wire::PlanRecord record = decide(t, context);
  note_decision(record, context);
  took.decide = watch.lap();
  OpenIteration open = open_iteration(t, c, record, context);
  const std::vector<int> need = candidates_needed(open);
  const std::int64_t added = enqueue(t, open, queue_order(open, need));
  took.enqueue = watch.lap();
  if (!need.empty()) {
    std::string needs;
    for (int n : need)
      needs += (needs.empty() ? "" : " ") + std::to_string(n);
    log::info("iteration {}: adaptive allocation, candidates needed per prompt: {}", t, needs);
  }
  state_.put_planner_progress({.enqueued_through = t, .unix_ms = clock::unix_ms()});
  candidates_[t] = open.candidates;
  status_.planned_through = t;
  status_.tasks_enqueued += added;
  ++status_.iterations_planned;
  metrics_.tasks_enqueued.inc(static_cast<double>(added));
  metrics_.planned_iteration.set(static_cast<double>(t));
  took.record = watch.lap();
  log_plan(t, added, open, took, watch);
  if (open.candidates > 0) open_[t] = std::move(open);
}

exploration::IterationContext Planner::context_for(std::int64_t t, std::int64_t c,
                                                   const TrainerTiming& timing) {
  exploration::IterationContext context;
  context.iteration = t;
  context.trainer_iteration = c;
  context.prompts = options_.prompts_per_iteration;
  context.time_budget = time_budget(timing);
  context.live_explorers = status_.live_explorers;
  context.queue_depth = parts_.queue->stats().length;
  if (timing.training_seconds && *timing.training_seconds > 0) {
    context.training_time =
        std::chrono::milliseconds(static_cast<std::int64_t>(*timing.training_seconds * 1000.0));
  }
  context.finish_model = &finish_model_;
  return context;
}

void Planner::note_decision(const wire::PlanRecord& record,
                            const exploration::IterationContext& context) {
  status_.desired_explorers = desired_explorers(context);
  if (status_.desired_explorers) {
    metrics_.desired_explorers.set(static_cast<double>(*status_.desired_explorers));
  }
  metrics_.planned_candidates.set(static_cast<double>(record.candidates));
}

Planner::OpenIteration Planner::open_iteration(std::int64_t t, std::int64_t c,
                                               const wire::PlanRecord& record,
                                               const exploration::IterationContext& context) {
  const int prompts = options_.prompts_per_iteration;
  OpenIteration open;
  open.candidates = static_cast<int>(record.candidates);
  open.steps = static_cast<int>(record.steps);
  open.weights_version = options_.offload ? t : std::clamp<std::int64_t>(t - 1, 0, c);
  open.deadline_unix_ms = clock::unix_ms() + context.time_budget.count();
  open.time_budget = context.time_budget;
  open.keep_trajectories = options_.keep_trajectories && open.steps == options_.rollout_steps &&
                           options_.trained.size() > 0;
  for (const auto& prompt : run::iteration_prompts(*prompts_, options_.run_seed, t, prompts))
    open.prompts.push_back(prompt.text());
  if (open.candidates == 0) return open;
  const auto n = static_cast<std::size_t>(open.candidates);
  open.rewards.assign(static_cast<std::size_t>(prompts), std::vector<std::optional<double>>(n));
  open.purged.assign(static_cast<std::size_t>(prompts), std::vector<bool>(n, false));
  open.satisfied.assign(static_cast<std::size_t>(prompts), false);
  open.enqueued_at = std::chrono::steady_clock::now();
  // P x the policy's N, from the plan record (which also holds it for a restarted planner).
  open.budget_samples = std::int64_t{prompts} * record.budget_candidates;
  if (context.live_explorers && *context.live_explorers > 0) {
    const exploration::ExplorationWork work{open.budget_samples, open.steps, context.queue_depth};
    if (const auto p =
            finish_model_.predict(work, *context.live_explorers,
                                  seconds(context.training_time.value_or(context.time_budget)))) {
      open.predicted_seconds = p->mean_seconds;
      open.probability = p->probability;
      metrics_.predicted_seconds.set(p->mean_seconds);
    }
  }
  return open;
}

std::vector<int> Planner::candidates_needed(const OpenIteration& open) {
  std::vector<int> need;
  if (!options_.adaptive || open.candidates == 0) return need;
  for (const std::string& prompt : open.prompts) {
    need.push_back(
        exploration::candidates_needed(prior_of(prompt), options_.allocation, open.candidates));
  }
  return need;
}

std::vector<std::pair<int, int>> Planner::queue_order(const OpenIteration& open,
                                                      const std::vector<int>& need) const {
  if (!need.empty()) {
    return exploration::exploration_order(need, options_.allocation.group_size, open.candidates);
  }
  std::vector<std::pair<int, int>> order;
  for (int i = 0; i < options_.prompts_per_iteration; ++i) {
    for (int j = 0; j < open.candidates; ++j)
      order.emplace_back(i, j);
  }
  return order;
}

std::int64_t Planner::enqueue(std::int64_t t, const OpenIteration& open,
                              const std::vector<std::pair<int, int>>& order) {
  if (!parts_.task_key) {
    parts_.task_key = run::planner_task_key(*parts_.store);
    log::info(
        "signing seed tasks with key {} ({})", parts_.task_key->id(),
        run::TaskKey::from_env() ? std::string(run::kTaskKeyEnvVar) : "the run-local key in Redis");
  }
  std::vector<queue::Task> tasks;
  tasks.reserve(order.size());
  for (const auto& [i, j] : order)
    tasks.push_back(queue::Task{run::seed_task_id(t, i, j), make_task(t, open, i, j).encode()});
  return tasks.empty() ? 0 : parts_.queue->enqueue_many(tasks);
}

void Planner::log_plan(std::int64_t t, std::int64_t added, const OpenIteration& open,
                       PlanSeconds took, clock::Stopwatch& watch) {
  const int prompts = options_.prompts_per_iteration;
  // Diagnostics only: the iteration is planned whether or not they can be read.
  std::string queue = "unknown";
  std::string previous = t > 0 ? "unknown" : "none";
  try {
    const queue::QueueStats after = parts_.queue->stats();
    refresh_gauges(after);
    queue = std::to_string(after.length) + " (" + std::to_string(after.leased) +
            " leased), dead letters " + std::to_string(after.dead_letters);
    if (t > 0) {
      const auto it = candidates_.find(t - 1);
      const int n = it != candidates_.end() ? it->second : open.candidates;
      const std::int64_t results = count_results(t - 1, n);
      metrics_.previous_results.set(static_cast<double>(results));
      previous = std::to_string(results) + "/" + std::to_string(std::int64_t{prompts} * n);
    }
  } catch (const queue::QueueError& e) {
    log::warn("iteration {}: queue statistics unavailable: {}", t, e.what());
  }
  took.report = watch.lap();
  metrics_.plan_decide_seconds.inc(took.decide);
  metrics_.plan_enqueue_seconds.inc(took.enqueue);
  metrics_.plan_record_seconds.inc(took.record);
  metrics_.plan_report_seconds.inc(took.report);
  log::info(
      "iteration {}: enqueued {} new of {} tasks ({} prompts x {} candidates, {} steps, weights "
      "v{}{}, deadline in {} s); queue depth {}; results of iteration {}: {}; planned in {:.3f} s "
      "(decide {:.3f}, enqueue {:.3f}, record {:.3f}, report {:.3f})",
      t, added, std::int64_t{prompts} * open.candidates, prompts, open.candidates, open.steps,
      open.weights_version, open.keep_trajectories ? ", trajectories kept" : "",
      seconds(open.time_budget), queue, t - 1, previous, watch.elapsed(), took.decide, took.enqueue,
      took.record, took.report);
}

wire::SeedTask Planner::make_task(std::int64_t t, const OpenIteration& open, int i, int j) const {
  wire::SeedTask task;
  task.run_id = options_.run_id;
  task.iteration = t;
  task.prompt_index = i;
  task.prompt_text = open.prompts.at(static_cast<std::size_t>(i));
  task.weights_version = open.weights_version;
  task.sampler_steps = open.steps;
  task.deadline_unix_ms = open.deadline_unix_ms;
  task.attempt = 0;
  task.max_staleness = options_.offload ? 0 : -1;
  task.trajectory_begin = open.keep_trajectories ? options_.trained.begin : 0;
  task.trajectory_end = open.keep_trajectories ? options_.trained.end : 0;
  task.seed = run::candidate_seed(options_.run_seed, t, i, j);
  run::sign(task, *parts_.task_key);
  return task;
}

std::int64_t Planner::count_results(std::int64_t iteration, int candidates) {
  std::int64_t found = 0;
  for (int i = 0; i < options_.prompts_per_iteration; ++i) {
    for (int j = 0; j < candidates; ++j) {
      if (parts_.queue->result(run::seed_task_id(iteration, i, j))) ++found;
    }
  }
  return found;
}

void Planner::purge_passed(std::int64_t c) {
  for (std::int64_t t = purged_through_ + 1; t < c; ++t) {
    if (!options_.purge_passed) {  // the old behaviour: only the posteriors
      if (const auto record = state_.plan(t); record && record->candidates > 0)
        update_posteriors(t, *record);
      purged_through_ = t;
      continue;
    }
    std::optional<wire::PlanRecord> record;
    try {
      record = state_.plan(t);
    } catch (const run::MalformedRunState& e) {
      log::warn("{}: the tasks of passed iteration {} stay queued", e.what(), t);
    }
    if (record && record->candidates > 0) {
      std::vector<std::string> ids;
      for (int i = 0; i < options_.prompts_per_iteration; ++i) {
        for (int j = 0; j < record->candidates; ++j)
          ids.push_back(run::seed_task_id(t, i, j));
      }
      const auto purged =
          parts_.queue->purge(ids, "iteration " + std::to_string(t) + " passed by the trainer");
      const auto n = static_cast<std::int64_t>(purged.size());
      status_.tasks_purged_passed += n;
      metrics_.purged_passed.inc(static_cast<double>(n));
      if (n > 0) {
        log::info("iteration {}: purged {} waiting tasks (the trainer is at iteration {})", t, n,
                  c);
      }
      update_posteriors(t, *record);
    }
    open_.erase(t);
    purged_through_ = t;
  }
}

exploration::BetaPosterior Planner::prior_of(const std::string& prompt_text) {
  std::optional<wire::PromptPosterior> record;
  try {
    record = state_.prompt_posterior(prompt_text);
  } catch (const run::MalformedRunState& e) {
    log::warn("{}; prompt '{}' starts from the pooled prior", e.what(), prompt_text);
  }
  if (record) return {record->a, record->b};
  // An unseen prompt: the mean of every prompt seen so far, with the weight of two rewards.
  const double mean = pooled_.mean();
  return {2.0 * mean, 2.0 * (1.0 - mean)};
}

void Planner::update_posteriors(std::int64_t t, const wire::PlanRecord& plan) {
  const int prompts = options_.prompts_per_iteration;
  const auto prompt_list = run::iteration_prompts(*prompts_, options_.run_seed, t, prompts);
  std::vector<std::string> ids;
  for (int i = 0; i < prompts; ++i) {
    for (int j = 0; j < plan.candidates; ++j)
      ids.push_back(run::seed_task_id(t, i, j));
  }
  const auto results = parts_.queue->results(ids);
  for (int i = 0; i < prompts; ++i) {
    std::vector<double> rewards;
    for (int j = 0; j < plan.candidates; ++j) {
      const auto& bytes = results[static_cast<std::size_t>(i * plan.candidates + j)];
      if (!bytes) continue;
      try {
        const auto r = wire::SeedResult::decode(*bytes);
        if (std::isfinite(r.reward)) rewards.push_back(r.reward);
      } catch (const wire::WireError&) {
        // Malformed results are the trainer's to count and quarantine; they teach nothing here.
      }
    }
    const std::string& text = prompt_list[static_cast<std::size_t>(i)].text();
    std::optional<wire::PromptPosterior> record;
    try {
      record = state_.prompt_posterior(text);
    } catch (const run::MalformedRunState& e) {
      log::warn("{}; prompt '{}' starts its posterior again", e.what(), text);
    }
    wire::PromptPosterior posterior = record.value_or(wire::PromptPosterior{.prompt_text = text});
    if (posterior.updated_through >= t) continue;  // folded in before (a restarted planner)
    exploration::BetaPosterior beta{posterior.a, posterior.b};
    for (double r : rewards) {
      beta.add(r);
      pooled_.add(r);
    }
    const bool uniform = exploration::all_alike(rewards);
    posterior.a = beta.a;
    posterior.b = beta.b;
    posterior.updated_through = t;
    if (uniform) ++posterior.uniform_iterations;
    state_.put_prompt_posterior(posterior);
    if (uniform) {
      ++status_.uniform_prompts;
      metrics_.uniform_prompts.inc();
      log::info(
          "iteration {}: prompt {} '{}' stayed uniform after {} candidates (all rewards {}); "
          "posterior mean {:.3f} over {} uniform iterations",
          t, i, text, rewards.size(), rewards.front(), beta.mean(), posterior.uniform_iterations);
    }
  }
}

void Planner::track_open(std::int64_t c) {
  for (auto it = open_.begin(); it != open_.end();) {
    const std::int64_t t = it->first;
    OpenIteration& open = it->second;
    if (t < c) {  // passed: purge_passed() has dealt with it
      it = open_.erase(it);
      continue;
    }
    read_results(t, open);
    if (options_.adaptive) {
      purge_satisfied_prompts(t, open);
      if (!open.budget_spent) purge_spent_budget(t, open);
    }
    if (!fully_explored(open)) {
      ++it;
      continue;
    }
    note_explored(t, open);
    it = open_.erase(it);
  }
}

void Planner::read_results(std::int64_t t, OpenIteration& open) {
  std::vector<std::string> ids;
  std::vector<std::pair<int, int>> where;
  for (int i = 0; i < static_cast<int>(open.prompts.size()); ++i) {
    for (int j = 0; j < open.candidates; ++j) {
      if (open.rewards[i][j] || open.purged[i][j]) continue;
      ids.push_back(run::seed_task_id(t, i, j));
      where.emplace_back(i, j);
    }
  }
  const auto results = parts_.queue->results(ids);
  for (std::size_t k = 0; k < results.size(); ++k) {
    if (!results[k]) continue;
    const auto [i, j] = where[k];
    try {
      open.rewards[i][j] = wire::SeedResult::decode(*results[k]).reward;
    } catch (const wire::WireError&) {
      open.rewards[i][j] = std::numeric_limits<double>::quiet_NaN();  // there, but not usable
    }
  }
}

void Planner::purge_satisfied_prompts(std::int64_t t, OpenIteration& open) {
  for (int i = 0; i < static_cast<int>(open.prompts.size()); ++i) {
    if (open.satisfied[i]) continue;
    std::vector<double> rewards;
    std::vector<std::string> waiting;
    for (int j = 0; j < open.candidates; ++j) {
      const auto& r = open.rewards[i][j];
      if (r && std::isfinite(*r)) rewards.push_back(*r);
      if (!r && !open.purged[i][j]) waiting.push_back(run::seed_task_id(t, i, j));
    }
    if (!exploration::contrast_reached(rewards, options_.allocation)) continue;
    open.satisfied[i] = true;
    const auto n = purge_waiting(
        open, waiting,
        "prompt " + std::to_string(i) + " of iteration " + std::to_string(t) + " explored enough");
    status_.tasks_purged_satisfied += n;
    metrics_.purged_satisfied.inc(static_cast<double>(n));
    if (n > 0) {
      log::info(
          "iteration {}: prompt {} has its contrast after {} candidates; purged {} of "
          "its waiting tasks",
          t, i, rewards.size(), n);
    }
  }
}

void Planner::purge_spent_budget(std::int64_t t, OpenIteration& open) {
  std::int64_t explored = 0;
  std::vector<std::string> waiting;
  for (int i = 0; i < static_cast<int>(open.prompts.size()); ++i) {
    for (int j = 0; j < open.candidates; ++j) {
      if (open.rewards[i][j]) ++explored;
      if (!open.rewards[i][j] && !open.purged[i][j]) waiting.push_back(run::seed_task_id(t, i, j));
    }
  }
  if (explored < open.budget_samples) return;
  open.budget_spent = true;
  const auto n = purge_waiting(open, waiting,
                               "iteration " + std::to_string(t) + " explored its budget of " +
                                   std::to_string(open.budget_samples) + " samples");
  status_.tasks_purged_budget += n;
  metrics_.purged_budget.inc(static_cast<double>(n));
  log::info("iteration {}: {} samples explored (the budget); purged {} waiting tasks", t, explored,
            n);
}

std::int64_t Planner::purge_waiting(OpenIteration& open, const std::vector<std::string>& waiting,
                                    const std::string& reason) {
  const auto purged = parts_.queue->purge(waiting, reason);
  for (const std::string& id : purged) {
    if (const auto parsed = run::parse_seed_task_id(id))
      open.purged[parsed->prompt][parsed->candidate] = true;
  }
  return static_cast<std::int64_t>(purged.size());
}

bool Planner::fully_explored(const OpenIteration& open) {
  for (std::size_t i = 0; i < open.prompts.size(); ++i) {
    for (int j = 0; j < open.candidates; ++j) {
      if (!open.rewards[i][j] && !open.purged[i][j]) return false;
    }
  }
  return true;
}

void Planner::note_explored(std::int64_t t, const OpenIteration& open) {
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - open.enqueued_at).count();
  metrics_.explored_seconds.set(took);
  log::info("iteration {}: explored in {:.3f} s (predicted {} s, finish probability {})", t, took,
            open.predicted_seconds ? std::to_string(*open.predicted_seconds) : "unknown",
            open.probability ? std::to_string(*open.probability) : "unknown");
  if (options_.decisions_file.empty()) return;
  nlohmann::json event{
      {"iteration", t}, {"event", "explored"}, {"seconds", took}, {"unix_ms", clock::unix_ms()}};
  if (open.predicted_seconds) event["predicted_seconds"] = *open.predicted_seconds;
  if (open.probability) event["finish_probability"] = *open.probability;
  std::ofstream(options_.decisions_file, std::ios::app) << event.dump() << "\n";
}

std::optional<int> Planner::desired_explorers(const exploration::IterationContext& context) {
  const auto widest = parts_.policy->widest();
  if (!widest || widest->candidates <= 0) return std::nullopt;
  if (!finish_model_.has_timing()) {
    // Nothing measured yet: keep the pool as it is (at least one explorer to measure with).
    return std::max(context.live_explorers.value_or(1), 1);
  }
  const exploration::ExplorationWork work{std::int64_t{context.prompts} * widest->candidates,
                                          widest->steps, context.queue_depth};
  const double budget = seconds(context.training_time.value_or(context.time_budget));
  return finish_model_.explorers_needed(work, budget, options_.finish_probability)
      .value_or(options_.finish.max_explorers);
}

void Planner::maybe_reap() {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_reap_) return;
  if (reaper_) {
    try {
      const exploration::ReapReport report = reaper_->reap(clock::unix_ms());
      if (last_reap_ && status_.live_explorers) {
        // Departures (explorers found dead) over the live explorer-time since the last reap.
        const double elapsed = std::chrono::duration<double>(now - *last_reap_).count();
        finish_model_.observe_departures(
            static_cast<double>(report.reaped.size()), elapsed * *status_.live_explorers,
            std::chrono::duration<double>(now.time_since_epoch()).count());
      }
      last_reap_ = now;
      status_.live_explorers = report.live_explorers;
      status_.leases_released += report.released;
      metrics_.live_explorers.set(report.live_explorers);
      metrics_.leases_released.inc(static_cast<double>(report.released));
    } catch (const std::exception& e) {
      if (outage::classify(e) != outage::Failure::kOther) throw;  // unavailable, access denied
      // The fast path is an optimisation (expired leases are reclaimed anyway): it must not stop
      // the planning. Unavailability is different: the pass cannot succeed, back off.
      log::warn("looking for dead explorers failed: {}", e.what());
    }
  }
  refresh_gauges(parts_.queue->stats());
  next_reap_ = now + options_.heartbeat_period;
}

void Planner::check_state_kept(const std::optional<wire::TrainerProgress>& progress) {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_state_check_) return;
  next_state_check_ = now + options_.heartbeat_period;
  Witness seen;
  if (progress) seen.trainer_iteration = progress->iteration;
  try {
    if (const auto planned = state_.planner_progress())
      seen.planned_through = planned->enqueued_through;
  } catch (const run::MalformedRunState&) {
    seen.planned_through = witness_.planned_through;  // there, if unreadable: not lost
  }
  if (const auto latest = parts_.store->get("weights:latest")) {
    try {
      seen.weights_latest = std::stoll(*latest);
    } catch (const std::exception&) {
      seen.weights_latest = witness_.weights_latest;
    }
  }
  const queue::QueueStats stats = parts_.queue->stats();
  seen.enqueued_total = stats.enqueued_total;
  seen.results = stats.results;

  std::vector<std::string> vanished;
  const auto went_back = [](const std::optional<std::int64_t>& before,
                            const std::optional<std::int64_t>& now_seen) {
    return before && (!now_seen || *now_seen < *before);
  };
  const auto text = [](const std::optional<std::int64_t>& v) {
    return v ? std::to_string(*v) : std::string("none");
  };
  if (went_back(witness_.trainer_iteration, seen.trainer_iteration)) {
    vanished.push_back("the trainer's progress (iteration " + text(witness_.trainer_iteration) +
                       ", now " + text(seen.trainer_iteration) + ")");
  }
  if (went_back(witness_.planned_through, seen.planned_through)) {
    vanished.push_back("the planner's progress (enqueued through " +
                       text(witness_.planned_through) + ", now " + text(seen.planned_through) +
                       ") and its plan records");
  }
  if (went_back(witness_.weights_latest, seen.weights_latest)) {
    vanished.push_back("the published weights (latest v" + text(witness_.weights_latest) +
                       ", now " + text(seen.weights_latest) + ")");
  }
  if (seen.enqueued_total < witness_.enqueued_total) {
    vanished.push_back("the task queue (" + std::to_string(witness_.enqueued_total) +
                       " tasks enqueued in all, now " + std::to_string(seen.enqueued_total) +
                       "; their index, payloads and counters)");
  }
  if (witness_.results > 0 && seen.results == 0) {
    vanished.push_back("the explored results (" + std::to_string(witness_.results) + ")");
  }
  witness_ = seen;  // one line per loss: what is left is the new reference
  if (vanished.empty()) return;
  metrics_.state_losses.inc();
  std::string what;
  for (const std::string& v : vanished)
    what += (what.empty() ? "" : "; ") + v;
  log::error(
      "Redis lost the run's state: {} vanished (Redis restarted without its data, a FLUSHALL, or "
      "deleted keys); the run goes on from what is left and what went is not recovered",
      what);
}

void Planner::reconcile_open() {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_reconcile_) return;
  std::vector<std::string> ids;
  for (const auto& [t, open] : open_) {
    for (std::size_t i = 0; i < open.prompts.size(); ++i) {
      for (int j = 0; j < open.candidates; ++j) {
        const auto jj = static_cast<std::size_t>(j);
        if (!open.rewards[i][jj] && !open.purged[i][jj])
          ids.push_back(run::seed_task_id(t, static_cast<int>(i), j));
      }
    }
  }
  for (const auto& [t, candidates] : adopted_) {
    if (open_.count(t)) continue;
    for (int i = 0; i < options_.prompts_per_iteration; ++i) {
      for (int j = 0; j < candidates; ++j) {
        std::string id = run::seed_task_id(t, i, j);
        if (!given_up_.count(id)) ids.push_back(std::move(id));
      }
    }
  }
  // Called with no ids too: it also acknowledges what explorers completed and parked.
  const queue::Reconciliation r = parts_.queue->reconcile(ids);
  next_reconcile_ = now + options_.heartbeat_period;
  ++status_.reconcile_passes;
  status_.reconcile_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - now).count();
  const auto list = [](const std::vector<std::string>& v) {
    std::string out;
    for (std::size_t k = 0; k < v.size() && k < 8; ++k)
      out += (k ? ", " : "") + v[k];
    return v.size() > 8 ? out + ", ..." : out;
  };
  if (!r.requeued.empty()) {
    const auto n = static_cast<std::int64_t>(r.requeued.size());
    status_.tasks_reconciled += n;
    metrics_.tasks_reconciled.inc(static_cast<double>(n));
    log::warn(
        "reconciliation: {} tasks had vanished from the queue (acknowledged or deleted by a "
        "client other than the queue's scripts, or their lease dropped) and are enqueued again: "
        "{}",
        n, list(r.requeued));
  }
  if (!r.lost.empty()) {
    // Their payloads went too (the queue's keys deleted, Redis lost its data): this planner still
    // has what it enqueued them from.
    std::vector<queue::Task> tasks;
    for (const std::string& id : r.lost) {
      const auto parsed = run::parse_seed_task_id(id);
      const auto it = parsed ? open_.find(parsed->iteration) : open_.end();
      if (it == open_.end()) {
        given_up_.insert(id);  // enqueued by an earlier planner: nothing to rebuild it from
        continue;
      }
      tasks.push_back(queue::Task{
          id, make_task(it->first, it->second, parsed->prompt, parsed->candidate).encode()});
    }
    const std::int64_t added = tasks.empty() ? 0 : parts_.queue->enqueue_many(tasks);
    const auto n = static_cast<std::int64_t>(r.lost.size());
    status_.tasks_lost += n;
    status_.tasks_reconciled += added;
    metrics_.tasks_lost.inc(static_cast<double>(n));
    metrics_.tasks_reconciled.inc(static_cast<double>(added));
    log::error(
        "reconciliation: {} tasks vanished from the queue with their payloads (the queue's keys "
        "were deleted or Redis lost its data); enqueued {} of them again from the plan: {}",
        n, added, list(r.lost));
  }
}

void Planner::refresh_gauges(const queue::QueueStats& stats) {
  metrics_.queue_depth.set(static_cast<double>(stats.length));
  metrics_.dead_letters.set(static_cast<double>(stats.dead_letters));
  metrics_.oldest_lease_age_seconds.set(seconds(stats.oldest_lease_age));
  queue_totals_.update(stats);
}

int Planner::run(std::stop_token stop) {
  std::mutex mutex;
  std::condition_variable_any wake;  // notified by nothing but the stop request
  std::chrono::milliseconds backoff = options_.poll_interval;
  std::int64_t failures_in_a_row = 0;
  for (;;) {
    std::chrono::milliseconds wait = options_.poll_interval;
    try {
      const StepOutcome outcome = step();
      const bool redis_was_down = redis_.down();
      redis_.succeeded();  // logs the end of a Redis outage
      if (failures_in_a_row > 0 && !redis_was_down) {
        log::info("planner passes succeed again after {} failures", failures_in_a_row);
      }
      failures_in_a_row = 0;
      backoff = options_.poll_interval;
      if (outcome == StepOutcome::kFinished) {
        log_summary("the trainer finished");
        return 0;
      }
    } catch (const std::exception& e) {
      // QueueUnavailable / StoreUnavailable (Redis down), other queue/store errors, PlannerError:
      // none of them is fixed by exiting, and every pass is safe to repeat.
      const outage::Failure failure = outage::classify(e);
      if (failure == outage::Failure::kAccessDenied)
        throw;  // wrong credentials: retrying won't help
      ++failures_in_a_row;
      ++status_.failed_passes;
      metrics_.redis_errors.inc();
      wait = backoff;
      backoff = std::min(backoff * 2, options_.max_backoff);
      if (failure == outage::Failure::kUnavailable) {
        wait = redis_.failed(e);  // one line per change of state, not per attempt
      } else {
        log::error("planner pass failed (failure {} in a row), retrying in {} s: {}",
                   failures_in_a_row, seconds(wait), e.what());
      }
    }
    if (parts_.wait_for_event) {
      parts_.wait_for_event(wait, stop);  // ends early on an iteration event or a stop request
    } else {
      std::unique_lock lock(mutex);
      wake.wait_for(lock, stop, wait, [] { return false; });  // ends early on a stop request
    }
    if (stop.stop_requested()) {
      log_summary("stop requested");
      return 0;
    }
  }
}

void Planner::log_summary(const char* why) {
  std::string queue = "unknown (Redis unavailable)";
  try {
    const queue::QueueStats s = parts_.queue->stats();
    queue = "depth " + std::to_string(s.length) + ", results " + std::to_string(s.results) +
            ", dead letters " + std::to_string(s.dead_letters) + ", enqueued in all " +
            std::to_string(s.enqueued_total) + ", purged in all " + std::to_string(s.purged_total);
  } catch (const std::exception&) {
  }
  log::info(
      "planner done ({}): trainer iteration {}, planned through iteration {}; this planner "
      "enqueued {} tasks over {} iterations, purged {} waiting tasks of passed iterations, {} "
      "of prompts explored enough and {} past an iteration's budget, saw {} uniform prompts, "
      "handed back {} leases of dead explorers, {} failed passes; reconciliation: {} passes "
      "(one Redis call each, {:.3f} ms on average), {} vanished tasks enqueued again, {} lost; "
      "queue: {}",
      why, status_.trainer_iteration ? std::to_string(*status_.trainer_iteration) : "unknown",
      status_.planned_through, status_.tasks_enqueued, status_.iterations_planned,
      status_.tasks_purged_passed, status_.tasks_purged_satisfied, status_.tasks_purged_budget,
      status_.uniform_prompts, status_.leases_released, status_.failed_passes,
      status_.reconcile_passes,
      status_.reconcile_passes > 0
          ? 1000.0 * status_.reconcile_seconds / static_cast<double>(status_.reconcile_passes)
          : 0.0,
      status_.tasks_reconciled, status_.tasks_lost, queue);
}

}  // namespace spotlight::planner
