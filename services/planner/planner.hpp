#pragma once
// The planner of exploration.mode=async (docs/iteration.md): owns the run's exploration schedule.
//
//   step():
//     every heartbeat period: check that the run's state this planner saw is still there (the
//       trainer's progress and the published weights never go back, the planner's progress, the
//       queue's enqueued count and its results never vanish); what went is named in one error
//       line per loss (Redis restarted with an empty AOF, a FLUSHALL, deleted keys) and counted
//       (spotlight_planner_state_losses_total); the run goes on with what is left
//     c = trainer_iteration (wire::TrainerProgress)      absent: kWaitingForTrainer
//     if finished or c >= iterations: acknowledge what explorers parked (LeaseQueue::reconcile
//       with no task), kFinished
//     every heartbeat period: reap dead explorers (explorer_reaper.hpp; an error other than
//                             unavailability is only logged), refresh gauges; the explorers
//                             reaped over the live explorer-seconds since the last reap feed the
//                             preemption rate of the finish-time model
//     if trainer_timing names an iteration k not fed back yet:
//       policy.observe({k, plan record k, trainer's group variance, explorers' mean
//                       sample_seconds / S over k's results}); each result's sample_seconds / S
//       feeds the finish-time model (common/exploration/finish_time.hpp)
//     for t in [purged_through + 1, c - 1]:              (iterations the trainer has passed)
//       purge t's tasks still waiting (LeaseQueue::purge, reason "iteration passed"; a task
//       leased to a live explorer completes); fold t's rewards into its prompts' posteriors
//       (wire::PromptPosterior, once per iteration) and report prompts whose explored rewards
//       were all alike (uniform)
//     for each iteration t >= c this planner enqueued and that is not explored yet:
//       read the results still missing; adaptive allocation: a prompt whose best G results
//       reach the contrast target has its waiting tasks purged (reason "prompt satisfied"), and
//       once P x N results are in (the policy's work) every waiting task is ("budget spent");
//       once every task has a result or was purged: log and record the measured exploration
//       time against the predicted one
//     every heartbeat period: reconcile (LeaseQueue::reconcile) the tasks of the open iterations
//       (enqueued by this planner, t >= c) that have no result and were not purged, and every task
//       of the iterations t >= c an earlier planner enqueued (from their plan records): one that
//       vanished from the queue is enqueued again (spotlight_planner_tasks_reconciled_total, one
//       warning line per pass); one whose payload vanished too is signed and enqueued again from
//       the open iteration (also counted spotlight_planner_tasks_lost_total, an error line; one of
//       an earlier planner's iteration is only counted and reported, once); the
//       parked completions and dead letters of explorers (which may not acknowledge) are
//       acknowledged
//     for t in [max(c, planner_state + 1), min(c + lookahead, iterations - 1)]:
//       d = plan record t if present (a restarted planner keeps what the trainer may have read),
//           else policy.decide({t, c, P, time budget, training time, live explorers, queue depth,
//                                the finish-time model})
//       desired explorers = the fewest explorers that would finish the policy's widest
//           exploration within the training time with probability finish_probability
//       put_if_absent(plan record t = wire::PlanRecord{t, d.candidates, d.steps, the policy's N
//           (budget_candidates), reason as JSON}); append the JSON to decisions_file
//           (before any task of t is enqueued)
//       enqueue_many(P x d.candidates seed tasks (adaptive allocation: in exploration_order() of
//           the prompts' needs, else prompt by prompt): id seed_task_id(t, i, j), wire::SeedTask{
//           prompt iteration_prompts(..)[i], seed candidate_seed(run_seed, t, i, j),
//           weights_version clamp(t - 1, 0, c) (offload: t, max_staleness 0),
//           sampler_steps d.steps, deadline now + time budget, attempt 0,
//           trajectory_begin/end: the trained steps when keep_trajectories and d.steps is the
//           rollout's step count, else none}, each signed with the run's task key))
//       planner_state = wire::PlannerProgress{t}          (after the tasks are in the queue)
//     kRunning
//
// Time budget: the trainer's last iteration_seconds (trainer_timing), else max_wait.
// Restartable purely from Redis: a new planner on the same keys continues after planner_state;
// were it to re-enqueue an iteration (it died between enqueue and planner_state), the queue
// ignores task ids it has seen, so nothing is enqueued twice.
//
// run(stop) loops step() every poll_interval, and at once when parts.wait_for_event reports an
// iteration event of the trainer's bus (planner_config.cpp wires it when bus.subscribe is on),
// until kFinished (returns 0) or a stop request
// (returns 0 after the current pass). A failed pass (Redis unavailable, or any queue/store error)
// is counted, and the next one waits an exponential back-off from poll_interval up to
// max_backoff; it never ends the loop, except when Redis refuses the credentials or permissions
// (QueueAccessDenied / StoreAccessDenied propagate: retrying cannot help). Redis outages are
// logged once per change of state (outage::OutageTracker: lost, retrying, restored), other
// failures once each.
//
// Thread-compatible: one thread drives a Planner (its queue and store are single connections).

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/clock/stopwatch.hpp"
#include "common/exploration/exploration_policy.hpp"
#include "common/exploration/explorer_directory.hpp"
#include "common/exploration/explorer_reaper.hpp"
#include "common/exploration/finish_time.hpp"
#include "common/exploration/prompt_allocation.hpp"
#include "common/metrics/metrics.hpp"
#include "common/outage/outage_tracker.hpp"
#include "common/queue/lease_queue.hpp"
#include "common/rollout/step_window.hpp"
#include "common/run/run_keys.hpp"
#include "common/run/run_state.hpp"
#include "common/run/task_signature.hpp"
#include "common/store/key_value_store.hpp"
#include "common/task/generator.hpp"
#include "common/task/options.hpp"
#include "common/task/prompt_source.hpp"
#include "services/planner/planner_metrics.hpp"
#include "services/planner/queue_metrics.hpp"

namespace spotlight::planner {

inline constexpr std::chrono::milliseconds kDefaultPollInterval{100};
inline constexpr std::chrono::milliseconds kDefaultMaxBackoff{5000};
inline constexpr std::chrono::milliseconds kDefaultMaxWait{60000};
inline constexpr std::chrono::milliseconds kDefaultHeartbeatPeriod{1000};
inline constexpr int kDefaultDeadHeartbeats = 3;

// Something the planner cannot work with (e.g. a malformed integer key); names the key.
class PlannerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct PlannerOptions {
  std::string run_id = "default";  // run.id
  std::uint64_t run_seed = 0;      // run.seed
  std::int64_t iterations = 30;    // trainer.iterations
  int prompts_per_iteration = 8;   // trainer.prompts_per_iteration (P)
  int lookahead = 1;               // planner.lookahead
  std::chrono::milliseconds poll_interval = kDefaultPollInterval;  // planner.poll_ms
  std::chrono::milliseconds max_backoff = kDefaultMaxBackoff;      // after failed passes
  std::chrono::milliseconds max_wait = kDefaultMaxWait;            // exploration.max_wait_seconds
  // explorer.heartbeat_ms: how often dead explorers are looked for; dead after
  // dead_heartbeats periods without one.
  std::chrono::milliseconds heartbeat_period = kDefaultHeartbeatPeriod;
  int dead_heartbeats = kDefaultDeadHeartbeats;
  task::TaskOptions task;  // the prompts' generator, when `prompts` is null
  // Where the prompts come from (run::prompt_source: task.kind); null: the generator of `task`.
  std::shared_ptr<const task::PromptSource> prompts;
  // Where every plan record (decision and reason) is appended as a JSON line; empty: nowhere.
  std::string decisions_file;
  // exploration.mode=offload: iteration t is enqueued only once the trainer works on it (v_t is
  // published; lookahead must be 0) and its tasks ask for exactly v_t: the explorers sample the
  // rollouts with the current weights. Otherwise t is explored ahead with v_{t-1}.
  bool offload = false;
  // Kept trajectories (exploration.reuse=off_policy, offload): tasks sampled with the rollout's
  // step count ask the explorers to keep the trained steps of their trajectory for the trainer.
  bool keep_trajectories = false;
  int rollout_steps = 10;             // sampler.steps
  rollout::StepWindow trained{0, 9};  // trainer.train_step_begin / end against rollout_steps
  // exploration.allocation=adaptive: per-prompt exploration (prompt_allocation.hpp) with
  // allocation.{group_size, contrast_target, probability}; fixed: every prompt gets N candidates.
  // The plan asks for adaptive_cap x N candidates per prompt (room for the prompts that need
  // more) and the iteration stops once P x N have results (exploration.adaptive_cap).
  bool adaptive = false;
  int adaptive_cap = 3;
  exploration::AllocationOptions allocation;
  // planner.purge_passed: purge the waiting tasks of iterations the trainer has passed (false:
  // they stay queued and are run, as before).
  bool purge_passed = true;
  // planner.finish_probability: the probability spotlight_planner_desired_explorers is sized for.
  double finish_probability = 0.9;
  exploration::FinishTimeOptions finish;  // the finish-time model of the explorer pool

  // Throws PlannerError naming the first bad field.
  void validate() const;
};

// The planner's services. `directory` may be null: no reaping, explorer count unknown.
struct PlannerParts {
  std::unique_ptr<queue::LeaseQueue> queue;     // the explore queue (run::explore_queue_options)
  std::unique_ptr<store::KeyValueStore> store;  // key prefix keys.prefix
  std::unique_ptr<exploration::ExplorerDirectory> directory;
  std::unique_ptr<exploration::ExplorationPolicy> policy;
  // The key every task is signed with (common/run/task_signature.hpp); std::nullopt:
  // run::planner_task_key(*store) ($SPOTLIGHT_TASK_KEY, else the run-local key), on first use.
  std::optional<run::TaskKey> task_key;
  // Waits up to `timeout` between passes and returns early when the trainer announces an
  // iteration (or stop is requested): the planner plans on iteration events. Empty: it sleeps
  // poll_interval between passes. Either way every pass reads the trainer's progress from Redis,
  // so a lost event costs at most one poll_interval.
  std::function<void(std::chrono::milliseconds timeout, std::stop_token stop)> wait_for_event;
};

enum class StepOutcome {
  kWaitingForTrainer,  // trainer_iteration absent
  kRunning,            // planned what is due
  kFinished,           // trainer_iteration >= iterations
};

// What this planner object did (not the run's totals, which live in the queue's stats).
struct PlannerStatus {
  std::optional<std::int64_t> trainer_iteration;  // last seen
  std::int64_t planned_through = -1;              // last planner_state seen or written
  std::int64_t tasks_enqueued = 0;                // new tasks (re-enqueues of known ids excluded)
  std::int64_t iterations_planned = 0;            // iterations enqueued by this object
  std::int64_t failed_passes = 0;                 // passes that threw
  std::int64_t leases_released = 0;               // handed back from dead explorers
  std::int64_t tasks_purged_passed = 0;           // purged: their iteration was passed
  std::int64_t tasks_purged_satisfied = 0;        // purged: their prompt was explored enough
  std::int64_t tasks_purged_budget = 0;           // purged: their iteration spent its budget
  std::int64_t uniform_prompts = 0;               // prompts whose explored rewards were all alike
  std::int64_t tasks_reconciled = 0;              // vanished from the queue, enqueued again
  std::int64_t tasks_lost = 0;                    // vanished, nothing to enqueue them again from
  std::int64_t reconcile_passes = 0;              // LeaseQueue::reconcile calls (one script each)
  double reconcile_seconds = 0;                   // their total wall time
  std::optional<int> desired_explorers;           // at the last plan
  std::optional<int> live_explorers;              // at the last reap
};

class Planner {
 public:
  // Throws PlannerError for bad options or missing parts, task::TaskError for bad task options.
  Planner(PlannerOptions options, run::RunKeys keys, PlannerParts parts,
          std::shared_ptr<metrics::Registry> registry = nullptr);
  ~Planner();

  // One pass (above). Throws queue::QueueError / store::StoreError (QueueUnavailable /
  // StoreUnavailable when Redis is unreachable) and PlannerError; a pass that throws may have
  // enqueued part of an iteration, which the next pass completes.
  StepOutcome step();

  // Loops step() until finished or `stop` is requested (above; the wait between passes ends at
  // once on a stop request); returns the exit status (0).
  int run(std::stop_token stop);

  const PlannerStatus& status() const { return status_; }
  const PlannerOptions& options() const { return options_; }
  const exploration::FinishTimeModel& finish_model() const { return finish_model_; }

 private:
  // An iteration this object enqueued, until it is explored (or passed).
  struct OpenIteration {
    int candidates = 0;
    int steps = 0;
    std::vector<std::string> prompts;                         // texts, by prompt index
    std::vector<std::vector<std::optional<double>>> rewards;  // [prompt][candidate], as read
    std::vector<bool> satisfied;                              // prompt's waiting tasks purged
    std::vector<std::vector<bool>> purged;                    // [prompt][candidate]
    std::chrono::steady_clock::time_point enqueued_at;
    std::optional<double> predicted_seconds;
    std::optional<double> probability;
    std::int64_t budget_samples = 0;  // P x the plan record's budget_candidates
    bool budget_spent = false;
    std::int64_t weights_version = 0;  // of its tasks
    std::int64_t deadline_unix_ms = 0;
    std::chrono::milliseconds time_budget{0};  // deadline_unix_ms - the time it was enqueued
    bool keep_trajectories = false;
  };
  // Wall time of plan()'s phases (spotlight_planner_plan_seconds_total{phase}).
  struct PlanSeconds {
    double decide = 0;   // context_for, decide, note_decision
    double enqueue = 0;  // open_iteration, candidates_needed, queue_order, enqueue
    double record = 0;   // the planner's progress and status
    double report = 0;   // log_plan's queue statistics
  };
  wire::SeedTask make_task(std::int64_t t, const OpenIteration& open, int prompt,
                           int candidate) const;
  struct TrainerTiming {
    std::optional<std::int64_t> iteration;
    std::optional<double> iteration_seconds;
    std::optional<double> training_seconds;  // without the wait for seeds
    std::optional<double> group_variance;
  };
  TrainerTiming read_timing();
  std::chrono::milliseconds time_budget(const TrainerTiming& timing) const;
  void feed_back(const TrainerTiming& timing);
  // Plans iteration t (the "for t in ..." step above): context_for, decide, open_iteration,
  // candidates_needed, queue_order, enqueue, then the progress record and log_plan.
  void plan(std::int64_t iteration, std::int64_t trainer_iteration, const TrainerTiming& timing);
  exploration::IterationContext context_for(std::int64_t iteration, std::int64_t trainer_iteration,
                                            const TrainerTiming& timing);
  // The plan record of t: the one that exists, else the policy's decision, written (first writer
  // wins: a record another planner wrote first is followed).
  wire::PlanRecord decide(std::int64_t iteration, const exploration::IterationContext& context);
  // The plan record's text: the decision, the policy's reasons, the finish-time prediction.
  nlohmann::json decision_record(std::int64_t iteration, const exploration::ExplorationDecision& d,
                                 int budget_candidates,
                                 const exploration::IterationContext& context);
  void note_decision(const wire::PlanRecord& record, const exploration::IterationContext& context);
  // The iteration's tasks' common fields and, when it explores, its tracking state (budget: the
  // record's prompts x budget_candidates; predicted time).
  OpenIteration open_iteration(std::int64_t iteration, std::int64_t trainer_iteration,
                               const wire::PlanRecord& record,
                               const exploration::IterationContext& context);
  // Adaptive allocation: each prompt's need (empty otherwise).
  std::vector<int> candidates_needed(const OpenIteration& open);
  // (prompt, candidate) pairs in queue order: prompt by prompt, or by need.
  std::vector<std::pair<int, int>> queue_order(const OpenIteration& open,
                                               const std::vector<int>& need) const;
  // Signs and enqueues the tasks; returns how many were new to the queue.
  std::int64_t enqueue(std::int64_t iteration, const OpenIteration& open,
                       const std::vector<std::pair<int, int>>& order);
  void log_plan(std::int64_t iteration, std::int64_t added, const OpenIteration& open,
                PlanSeconds took, clock::Stopwatch& watch);
  std::int64_t count_results(std::int64_t iteration, int candidates);
  void purge_passed(std::int64_t trainer_iteration);
  void update_posteriors(std::int64_t iteration, const wire::PlanRecord& plan);
  // Each open iteration at or after the trainer's: its new results read, then (adaptive) the
  // waiting tasks of prompts with their contrast and of an iteration past its budget purged; an
  // iteration with every task answered or purged is explored and closed.
  void track_open(std::int64_t trainer_iteration);
  void read_results(std::int64_t iteration, OpenIteration& open);
  void purge_satisfied_prompts(std::int64_t iteration, OpenIteration& open);
  void purge_spent_budget(std::int64_t iteration, OpenIteration& open);
  // Purges the waiting tasks (those still queued) and marks them; returns how many it purged.
  std::int64_t purge_waiting(OpenIteration& open, const std::vector<std::string>& waiting,
                             const std::string& reason);
  static bool fully_explored(const OpenIteration& open);
  void note_explored(std::int64_t iteration, const OpenIteration& open);
  exploration::BetaPosterior prior_of(const std::string& prompt_text);
  std::optional<int> desired_explorers(const exploration::IterationContext& context);
  void maybe_reap();
  void reconcile_open();
  void check_state_kept(const std::optional<wire::TrainerProgress>& progress);
  // What check_state_kept() last saw of the run's state.
  struct Witness {
    std::optional<std::int64_t> trainer_iteration;
    std::optional<std::int64_t> planned_through;
    std::optional<std::int64_t> weights_latest;
    std::int64_t enqueued_total = 0;
    std::int64_t results = 0;
  };
  void refresh_gauges(const queue::QueueStats& stats);
  void log_summary(const char* why);

  PlannerOptions options_;
  run::RunKeys keys_;
  PlannerParts parts_;
  run::RunState state_;  // over parts_.store
  std::shared_ptr<metrics::Registry> registry_;
  PlannerMetrics metrics_;
  QueueTotalsMetrics queue_totals_;
  std::shared_ptr<const task::PromptSource> prompts_;
  std::unique_ptr<exploration::ExplorerReaper> reaper_;
  std::chrono::steady_clock::time_point next_reap_{};
  std::chrono::steady_clock::time_point next_reconcile_{};
  std::chrono::steady_clock::time_point next_state_check_{};
  // Iterations t >= c enqueued by an earlier planner (not in open_): their plan's N, reconciled.
  std::map<std::int64_t, int> adopted_;
  std::int64_t adopted_through_ = -1;
  std::set<std::string> given_up_;  // lost tasks of adopted iterations (reported once)
  Witness witness_;
  std::map<std::int64_t, int> candidates_;  // iteration -> N enqueued by this object
  std::int64_t fed_back_through_ = -1;      // last iteration whose outcome the policy saw
  std::int64_t purged_through_ = -1;        // last passed iteration purged
  std::map<std::int64_t, OpenIteration> open_;
  exploration::FinishTimeModel finish_model_;
  exploration::BetaPosterior pooled_;  // every reward folded into posteriors by this object
  std::optional<std::chrono::steady_clock::time_point> last_reap_;
  PlannerStatus status_;
  outage::OutageTracker redis_;
  bool said_waiting_ = false;
};

}  // namespace spotlight::planner
