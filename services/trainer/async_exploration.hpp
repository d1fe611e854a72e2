#pragma once
// The trainer's side of exploration.mode=async and offload (docs/iteration.md, docs/reuse.md):
//  - AsyncSeedSource reads what the explorers found for an iteration from the lease queue's
//    results, waiting up to a deadline, and selects the G of maximum variance per prompt;
//    prompts with fewer than G explored seeds fall back to random seeds (counted). offload
//    selects nothing: the G seeds of a prompt are its candidates 0..G-1 (none's seeds), which
//    the explorers sampled with the current weights.
//    Tasks that will never have a result are not waited for (LeaseQueue::abandoned, one batch
//    per round): those the planner purged (exploration.allocation=adaptive: their prompt had its
//    contrast; an iteration passed), and those the queue dead-lettered (an explorer rejected
//    them, or they failed or expired past exploration.max_deliveries), which are lost for the
//    iteration, counted (SeedSelection::dead_lettered_tasks) and warned about once per task.
//    The wait sleeps on the queue's result bell (rung by complete() in the script that records a
//    result, and by purges and dead-letterings) and reads the missing results in one batch when it
//    rings; it re-reads them every `resync` anyway, so a lost wake-up costs at most that long.
//    Every result is checked against its task first (run::check_result); one that does not check
//    out (poisoned: garbage, another task's, a reward that is not finite) is quarantined with its
//    reason and the task runs again (LeaseQueue::quarantine), so the wait goes on for the real
//    result instead of stalling on the bad one; counted in SeedSelection.
//    A wait that runs longer than the trainer's last iteration (start to start, and at least
//    explain_floor; max_wait / 2 for the first, and at most max_wait / 2) logs why, once per
//    iteration: no planner progress (no plan record, or the planner
//    has not enqueued the iteration), an empty queue (none of the missing tasks is waiting or
//    leased), no explorers (tasks wait, none is leased), or slow exploration (what is leased).
//    With trajectories (exploration.reuse=off_policy, offload) the chosen seeds' kept
//    trajectories are read from the trajectory store and checked (rollout::accept_trajectory);
//    the usable ones are the iteration's rollouts, trained on with the importance ratio against
//    the weights that sampled them. A missing or rejected one is counted by reason and sampled by
//    the trainer. Trajectories of seeds not chosen are deleted at once, the chosen ones once the
//    iteration is checkpointed (iteration_done); the store's expiry takes what is left. An
//    iteration whose plan record has another step count than the rollout's has none to read.
// The weights publisher beside it: services/trainer/weights_publisher.hpp.

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "common/outage/retry.hpp"
#include "common/queue/lease_queue.hpp"
#include "common/rollout/rollout.hpp"
#include "common/run/run_config.hpp"
#include "common/run/run_state.hpp"
#include "common/store/key_value_store.hpp"
#include "common/store/trajectory_store.hpp"
#include "common/store/weight_store.hpp"
#include "common/wire/messages.hpp"
#include "services/trainer/grpo_trainer.hpp"
#include "services/trainer/seed_source.hpp"

namespace spotlight::trainer {

struct AsyncSeedOptions {
  std::string run_id = "default";  // results must name it
  int group_size = 8;
  int candidates = 24;
  uint64_t run_seed = 0;
  std::chrono::duration<double> max_wait{60.0};
  // How results are waited for. With `notices` and a queue that rings a result bell
  // (LeaseQueue::has_result_notices), the wait sleeps on the bell and re-reads the missing results
  // (one LeaseQueue::results batch) when it rings, and at the latest every `resync` (the recovery
  // of a bell taken but not acted on). Otherwise the missing results are re-read every `poll`.
  bool notices = true;
  std::chrono::milliseconds resync{1000};
  std::chrono::milliseconds poll{50};
  // Quarantines of one task's results per iteration before it is given up as lost (a writer
  // that keeps poisoning it).
  int max_quarantines_per_task = 3;
  // A wait is explained (above) once longer than the last iteration and than this: iterations of
  // milliseconds do not make every small wait a warning.
  std::chrono::milliseconds explain_floor{2000};
  std::stop_token stop;  // ends the wait early (select() returns what it has)
  bool offload = false;  // exploration.mode=offload: no selection (above)
  // Train on the chosen seeds' kept trajectories (needs the trajectory and weight stores).
  bool trajectories = false;
  sampler::SamplerOptions rollout_sampler;  // what a trajectory must have been sampled with
  rollout::StepWindow window{0, 9};         // the trained steps it must hold
  std::vector<std::int64_t> latent_shape;   // one latent of the model, {C, H, W}
  at::TensorOptions tensor_options;         // where the trainer keeps rollouts
};

class AsyncSeedSource final : public SeedSource {
 public:
  // `plans` (may be null: N = options.candidates always) is the run's state, which holds the
  // planner's per-iteration plan records (wire::PlanRecord).
  // `retry` (may be null: errors propagate) runs every queue and store call through Redis
  // outages; the time spent waiting for Redis counts toward max_wait but never cuts a call short.
  // `trajectories` and `weights` (for the published checksums) are needed when
  // options.trajectories; all must outlive this object.
  AsyncSeedSource(AsyncSeedOptions options, queue::LeaseQueue& queue,
                  run::RunState* plans = nullptr, const outage::Retrier* retry = nullptr,
                  store::TrajectoryStore* trajectories = nullptr,
                  store::WeightStore* weights = nullptr);
  // N = the iteration's plan record's candidates (read while waiting; options.candidates when no
  // record shows up by the deadline). Waits until every candidate of every prompt has a result
  // or max_wait passes; N = 0 returns random seeds at once. The wait is reported as
  // explore_seconds (the time exploration holds the trainer up).
  SeedSelection select(int64_t iteration, const std::vector<task::Prompt>& prompts) override;
  // Deletes the kept trajectories of the iteration's chosen seeds.
  void iteration_done(int64_t iteration) override;

 private:
  // The rollouts of the chosen seeds that have a usable trajectory; counts the others.
  void reuse_trajectories(int64_t iteration, const std::vector<std::vector<int>>& chosen,
                          const std::vector<std::vector<std::optional<wire::SeedResult>>>& found,
                          SeedSelection& out);
  std::optional<std::string> weights_checksum(std::int64_t version);
  // select() is start_wait, wait_for_plan, wait_for_results (read_results rounds), choose and
  // report_wait over one Wait; its phases are named, with their seconds, on a debug line.
  struct Wait;
  Wait start_wait(int64_t iteration, size_t prompts);
  void read_plan(Wait& w);
  void wait_for_plan(Wait& w);  // then sizes the wait to the plan's candidates
  void wait_for_results(Wait& w);
  void read_results(Wait& w);  // one round: a batch of results, abandonments, quarantines
  // Logs once, when the wait is longer than usual, why (why_waiting).
  void explain_if_long(Wait& w, bool have_plan, size_t missing);
  SeedSelection choose(const Wait& w);  // the G of maximum variance per prompt, or fallbacks
  void report_wait(const Wait& w, const SeedSelection& out);
  // Why `missing` explored seeds of `iteration` are still missing (above), as one phrase.
  std::string why_waiting(int64_t iteration, bool have_plan, size_t missing);
  void erase_trajectories(const std::vector<std::string>& task_ids, const char* which);

  AsyncSeedOptions o_;
  queue::LeaseQueue& queue_;
  run::RunState* plans_;
  const outage::Retrier* retry_;
  store::TrajectoryStore* trajectories_;
  store::WeightStore* weights_;
  std::map<std::int64_t, std::string> checksums_;                    // published, by version
  std::map<std::int64_t, std::vector<std::string>> chosen_tasks_;    // iteration -> task ids
  std::optional<std::chrono::steady_clock::time_point> last_start_;  // of the previous select()
};

}  // namespace spotlight::trainer
