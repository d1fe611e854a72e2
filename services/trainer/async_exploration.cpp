#include "services/trainer/async_exploration.hpp"

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <utility>

#include "common/clock/stopwatch.hpp"
#include "common/clock/unix_time.hpp"
#include "common/log/log.hpp"
#include "common/rl/selection.hpp"
#include "common/rollout/trajectory.hpp"
#include "common/run/schedule.hpp"
#include "common/run/task_checks.hpp"
#include "common/store/errors.hpp"
#include "common/wire/messages.hpp"

namespace spotlight::trainer {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

AsyncSeedSource::AsyncSeedSource(AsyncSeedOptions options, queue::LeaseQueue& queue,
                                 run::RunState* plans, const outage::Retrier* retry,
                                 store::TrajectoryStore* trajectories, store::WeightStore* weights)
    : o_(std::move(options)),
      queue_(queue),
      plans_(plans),
      retry_(retry),
      trajectories_(trajectories),
      weights_(weights) {
  if (o_.trajectories && (trajectories_ == nullptr || weights_ == nullptr)) {
    throw std::invalid_argument(
        "AsyncSeedSource: training on kept trajectories needs the trajectory and weight stores");
  }
}

// One select()'s wait: what is known of the iteration's plan and results so far.
struct AsyncSeedSource::Wait {
  int64_t iteration = 0;
  size_t prompts = 0;
  Clock::time_point start;
  Clock::time_point deadline;
  Clock::duration usual{};  // longer than this: explain_if_long says why, once
  bool explained = false;
  // How many candidates the planner enqueued: its plan record, once it shows up.
  std::optional<int> planned;
  std::optional<int> planned_steps;
  int candidates = 0;
  std::vector<std::vector<std::optional<wire::SeedResult>>> found;  // [prompt][candidate]
  // Quarantines per task this iteration; given up (lost) once no valid result can come.
  std::vector<std::vector<int>> quarantines;
  std::vector<std::vector<bool>> lost;
  size_t missing = 0;
  int quarantined = 0, lost_tasks = 0, purged = 0, dead_lettered = 0;
};

SeedSelection AsyncSeedSource::select(int64_t iteration, const std::vector<task::Prompt>& prompts) {
  clock::Stopwatch watch;
  Wait w = start_wait(iteration, prompts.size());
  wait_for_plan(w);
  const double plan_seconds = watch.lap();
  wait_for_results(w);
  const double results_seconds = watch.lap();
  SeedSelection out = choose(w);
  out.explore_seconds = std::chrono::duration<double>(Clock::now() - w.start).count();
  out.quarantined_results = w.quarantined;
  out.lost_tasks = w.lost_tasks;
  out.dead_lettered_tasks = w.dead_lettered;
  report_wait(w, out);
  SPOTLIGHT_LOG(debug) << "iteration " << iteration << ": seeds selected in " << watch.elapsed()
                       << " s (plan " << plan_seconds << ", results " << results_seconds
                       << ", choose " << watch.lap() << ")";
  return out;
}

AsyncSeedSource::Wait AsyncSeedSource::start_wait(int64_t iteration, size_t prompts) {
  Wait w;
  w.iteration = iteration;
  w.prompts = prompts;
  w.start = Clock::now();
  w.deadline = w.start + std::chrono::duration_cast<Clock::duration>(o_.max_wait);
  // Longer than the last iteration (start to start, at least explain_floor): say why, once.
  const auto half_wait = std::chrono::duration_cast<Clock::duration>(o_.max_wait / 2);
  w.usual =
      last_start_
          ? std::min(std::max<Clock::duration>(w.start - *last_start_, o_.explain_floor), half_wait)
          : half_wait;
  last_start_ = w.start;
  return w;
}

void AsyncSeedSource::explain_if_long(Wait& w, bool have_plan, size_t missing) {
  if (w.explained || Clock::now() - w.start < w.usual) return;
  const int64_t iteration = w.iteration;
  const auto start = w.start;
  w.explained = true;
  const double waited = std::chrono::duration<double>(Clock::now() - start).count();
  std::string why;
  try {
    why = why_waiting(iteration, have_plan, missing);
  } catch (const std::exception& e) {
    why = std::string("unknown (") + e.what() + ")";
  }
  SPOTLIGHT_LOG(warn) << "iteration " << iteration << ": waiting " << waited
                      << " s for explored seeds (longer than the last iteration), because of "
                      << why;
}

void AsyncSeedSource::read_plan(Wait& w) {
  const int64_t iteration = w.iteration;
  auto& planned = w.planned;
  auto& planned_steps = w.planned_steps;
  if (!plans_ || planned) return;
  try {
    if (const auto record = outage::call_with(retry_, [&] { return plans_->plan(iteration); })) {
      planned = static_cast<int>(record->candidates);
      planned_steps = static_cast<int>(record->steps);
    }
  } catch (const run::MalformedRunState& e) {
    SPOTLIGHT_LOG(warn) << "iteration " << iteration << ": plan record ignored: " << e.what();
    planned = o_.candidates;
  }
}

void AsyncSeedSource::wait_for_plan(Wait& w) {
  read_plan(w);
  while (plans_ && !w.planned && Clock::now() < w.deadline) {
    // polling interval of a condition wait with a deadline
    if (outage::wait_or_stop(o_.stop, o_.poll)) break;
    read_plan(w);
    if (!w.planned) explain_if_long(w, false, 0);
  }
  w.candidates = w.planned.value_or(o_.offload ? o_.group_size : o_.candidates);
  const auto c = static_cast<size_t>(w.candidates);
  w.found.assign(w.prompts, std::vector<std::optional<wire::SeedResult>>(c));
  w.quarantines.assign(w.prompts, std::vector<int>(c));
  w.lost.assign(w.prompts, std::vector<bool>(c));
  w.missing = w.prompts * c;
}

void AsyncSeedSource::wait_for_results(Wait& w) {
  // Read the missing results (one batch per round) until all are in (or lost) or the deadline
  // passes; between rounds sleep on the result bell, or poll without one.
  const bool bell = o_.notices && queue_.has_result_notices();
  while (w.missing > 0) {
    read_results(w);
    if (w.missing > 0) explain_if_long(w, true, w.missing);
    const auto now = Clock::now();
    if (w.missing == 0 || now >= w.deadline || o_.stop.stop_requested()) break;
    if (bell) {
      // A condition wait: returns when a result is recorded, else after `resync` (re-read anyway).
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(w.deadline - now);
      const auto wait = std::min(o_.resync, left);
      outage::call_with(retry_, [&] { return queue_.wait_result_notice(wait); });
    } else if (outage::wait_or_stop(o_.stop, o_.poll)) {  // polling interval of a condition wait
      break;
    }
  }
}

void AsyncSeedSource::read_results(Wait& w) {
  const int64_t iteration = w.iteration;
  const size_t n = w.prompts;
  const int candidates = w.candidates;
  auto& found = w.found;
  auto& lost = w.lost;
  auto& quarantines = w.quarantines;
  auto& missing = w.missing;
  auto& purged = w.purged;
  auto& dead_lettered = w.dead_lettered;
  auto& quarantined = w.quarantined;
  auto& lost_tasks = w.lost_tasks;
  std::vector<std::string> ids;
  std::vector<std::pair<size_t, int>> where;  // (prompt, candidate) of ids[k]
  std::vector<std::string> absent;            // ids without a result this round
  std::vector<size_t> absent_at;              // their k
  for (size_t i = 0; i < n; ++i) {
    for (int j = 0; j < candidates; ++j) {
      if (found[i][j] || lost[i][j]) continue;
      ids.push_back(run::seed_task_id(iteration, static_cast<int>(i), j));
      where.emplace_back(i, j);
    }
  }
  const auto values = outage::call_with(retry_, [&] { return queue_.results(ids); });
  // Tasks without a result that left the queue without one will never have one: purged by the
  // planner (not needed), or dead-lettered (rejected, or failed or expired past max_deliveries:
  // a problem, warned about once per task). One batch per round; both ring the result bell.
  for (size_t k = 0; k < ids.size() && k < values.size(); ++k) {
    if (values[k]) continue;
    absent.push_back(ids[k]);
    absent_at.push_back(k);
  }
  std::vector<std::optional<queue::Abandoned>> gone;
  if (!absent.empty()) gone = outage::call_with(retry_, [&] { return queue_.abandoned(absent); });
  for (size_t a = 0; a < absent.size() && a < gone.size(); ++a) {
    if (!gone[a]) continue;
    const auto [i, j] = where[absent_at[a]];
    lost[i][j] = true;
    --missing;
    if (gone[a]->how == queue::Abandonment::kPurged) {
      ++purged;
      continue;
    }
    ++dead_lettered;
    SPOTLIGHT_LOG(warn) << "iteration " << iteration << ": task '" << absent[a]
                        << "' was dead-lettered (" << gone[a]->reason
                        << "); its candidate is lost for this iteration";
  }
  for (size_t k = 0; k < ids.size() && k < values.size(); ++k) {
    const auto& bytes = values[k];
    const auto [i, j] = where[k];
    if (!bytes) continue;
    const std::string& id = ids[k];
    const run::ExpectedResult expected{
        id, o_.run_id, iteration, static_cast<int64_t>(i),
        run::candidate_seed(o_.run_seed, iteration, static_cast<int>(i), j)};
    const run::CheckedResult checked = run::check_result(*bytes, expected);
    if (checked.result) {
      found[i][j] = *checked.result;
      --missing;
      continue;
    }
    // A poisoned entry: move it aside with its reason and run the task again.
    const auto q =
        outage::call_with(retry_, [&] { return queue_.quarantine(id, *bytes, checked.problem); });
    if (q.quarantined) ++quarantined;
    const bool can_come = q.requeued || q.still_queued || !q.quarantined;
    if (q.quarantined && (!can_come || ++quarantines[i][j] >= o_.max_quarantines_per_task)) {
      lost[i][j] = true;
      ++lost_tasks;
      --missing;
    }
    SPOTLIGHT_LOG(warn) << "iteration " << iteration << ": result of '" << id << "' quarantined ("
                        << checked.problem << "); "
                        << (lost[i][j]   ? "the task is lost for this iteration"
                            : q.requeued ? "the task runs again"
                                         : "its holder completes it");
  }
}

SeedSelection AsyncSeedSource::choose(const Wait& w) {
  const int64_t iteration = w.iteration;
  const size_t n = w.prompts;
  const int candidates = w.candidates;
  const auto& found = w.found;
  const auto& planned_steps = w.planned_steps;
  SeedSelection out;
  double variance_sum = 0;
  std::vector<std::vector<int>> chosen_candidates(n);
  for (size_t i = 0; i < n; ++i) {
    std::vector<double> rewards;
    std::vector<uint64_t> seeds;
    std::vector<int> index_of;  // candidate index of rewards[m]
    for (int j = 0; j < candidates; ++j) {
      if (!found[i][j]) continue;
      rewards.push_back(found[i][j]->reward);
      seeds.push_back(run::candidate_seed(o_.run_seed, iteration, static_cast<int>(i), j));
      index_of.push_back(j);
    }
    std::vector<uint64_t> chosen;
    auto& chosen_j = chosen_candidates[i];
    if (!o_.offload && static_cast<int>(rewards.size()) >= o_.group_size) {
      std::vector<double> chosen_rewards;
      for (size_t index : rl::select_max_variance(rewards, o_.group_size)) {
        chosen.push_back(seeds[index]);
        chosen_rewards.push_back(rewards[index]);
        chosen_j.push_back(index_of[index]);
      }
      variance_sum += rl::variance(chosen_rewards);
    } else {
      // offload: candidates 0..G-1 are the rollouts. async with too little explored in time:
      // plain Flow-GRPO seeds for this prompt (the same candidates 0..G-1).
      if (static_cast<int>(rewards.size()) < o_.group_size) ++out.fallback_prompts;
      for (int j = 0; j < o_.group_size; ++j) {
        chosen.push_back(run::candidate_seed(o_.run_seed, iteration, static_cast<int>(i), j));
        chosen_j.push_back(j);
      }
    }
    out.seeds.push_back(std::move(chosen));
    if (!o_.offload) {  // offload explores nothing: its rewards are the rollouts'
      out.candidate_rewards.push_back(std::move(rewards));
      out.candidate_seeds.push_back(std::move(seeds));
    }
  }
  const size_t selected = n - out.fallback_prompts;
  out.selected_variance = selected ? variance_sum / static_cast<double>(selected) : 0.0;
  // Seeds explored with fewer steps than a rollout (a bandit arm) have no trajectory to reuse.
  const bool rollout_length = !planned_steps || *planned_steps == o_.rollout_sampler.steps;
  if (o_.trajectories && rollout_length) {
    reuse_trajectories(iteration, chosen_candidates, found, out);
  }
  return out;
}

void AsyncSeedSource::report_wait(const Wait& w, const SeedSelection& out) {
  const int64_t iteration = w.iteration;
  const size_t n = w.prompts;
  const int candidates = w.candidates;
  const size_t missing = w.missing;
  const int purged = w.purged, dead_lettered = w.dead_lettered;
  const int quarantined = w.quarantined, lost_tasks = w.lost_tasks;
  if (missing > 0) {
    SPOTLIGHT_LOG(warn) << "iteration " << iteration << ": " << missing << " of "
                        << n * static_cast<size_t>(candidates)
                        << (o_.offload ? " offloaded rollouts" : " explored seeds")
                        << " missing at the deadline; " << out.fallback_prompts
                        << " prompts fell back to the trainer's own seeds";
  }
  if (purged > 0) {
    SPOTLIGHT_LOG(info) << "iteration " << iteration << ": " << purged
                        << " candidates not explored (the planner purged them: their prompts "
                           "had their contrast)";
  }
  if (dead_lettered > 0) {
    SPOTLIGHT_LOG(warn) << "iteration " << iteration << ": " << dead_lettered << " of "
                        << n * static_cast<size_t>(candidates)
                        << " candidates lost: their tasks were dead-lettered (see "
                           "the dead-letter stream)";
  }
  if (quarantined > 0) {
    SPOTLIGHT_LOG(warn) << "iteration " << iteration << ": " << quarantined
                        << " invalid results quarantined, " << lost_tasks
                        << " of their tasks lost for this iteration";
  }
}

std::string AsyncSeedSource::why_waiting(int64_t iteration, bool have_plan, size_t missing) {
  if (plans_) {
    std::optional<wire::PlannerProgress> progress;
    try {
      progress = outage::call_with(retry_, [&] { return plans_->planner_progress(); });
    } catch (const run::MalformedRunState&) {
    }
    if (!have_plan || !progress || progress->enqueued_through < iteration) {
      std::string last = "nothing";
      if (progress) {
        last = "through iteration " + std::to_string(progress->enqueued_through) + ", " +
               std::to_string(static_cast<double>(clock::unix_ms() - progress->unix_ms) / 1000.0) +
               " s ago";
      }
      return "no planner progress: " +
             std::string(have_plan ? "" : "no plan record for this iteration; ") +
             "the planner has enqueued " + last + " (is spotlight-planner running?)";
    }
  }
  const queue::QueueStats s = outage::call_with(retry_, [&] { return queue_.stats(); });
  if (s.length == 0) {
    return "an empty queue: none of the " + std::to_string(missing) +
           " missing tasks is waiting or leased (the planner enqueues vanished tasks again at its "
           "next reconciliation)";
  }
  if (s.leased == 0) {
    return "no explorers: " + std::to_string(s.waiting) +
           " tasks wait in the queue and none is leased (are explorers running?)";
  }
  return "slow exploration: " + std::to_string(s.leased) + " tasks leased, " +
         std::to_string(s.waiting) + " waiting, the oldest lease idle for " +
         std::to_string(static_cast<double>(s.oldest_lease_age.count()) / 1000.0) + " s";
}

void AsyncSeedSource::reuse_trajectories(
    int64_t iteration, const std::vector<std::vector<int>>& chosen,
    const std::vector<std::vector<std::optional<wire::SeedResult>>>& found, SeedSelection& out) {
  std::vector<std::string> chosen_ids, other_ids;
  for (size_t i = 0; i < found.size(); ++i) {
    std::vector<bool> is_chosen(found[i].size(), false);
    for (int j : chosen[i]) {
      if (j < static_cast<int>(is_chosen.size())) is_chosen[static_cast<size_t>(j)] = true;
    }
    for (size_t j = 0; j < found[i].size(); ++j) {
      const auto id = run::seed_task_id(iteration, static_cast<int>(i), static_cast<int>(j));
      (is_chosen[j] ? chosen_ids : other_ids).push_back(id);
    }
  }
  // Seeds not chosen are never trained on: their trajectories go now.
  erase_trajectories(other_ids, "unselected");
  chosen_tasks_[iteration] = chosen_ids;

  int reused = 0;
  for (size_t i = 0; i < chosen.size(); ++i) {
    std::vector<std::optional<rollout::Rollout>> group;
    for (size_t g = 0; g < chosen[i].size(); ++g) {
      const int j = chosen[i][g];
      const bool has_result = j < static_cast<int>(found[i].size()) && found[i][j].has_value();
      if (!has_result) {
        group.emplace_back();  // the trainer samples it (counted as a fallback prompt)
        continue;
      }
      const wire::SeedResult& result = *found[i][j];
      const auto id = run::seed_task_id(iteration, static_cast<int>(i), j);
      std::optional<std::string> bytes;
      try {
        bytes = outage::call_with(retry_, [&] { return trajectories_->get(id); });
      } catch (const store::StoreError& e) {
        SPOTLIGHT_LOG(warn) << "trajectory of task '" << id
                            << "' unreadable (sampled instead): " << e.what();
      }
      if (!bytes) {
        ++out.rejected_trajectories["missing"];
        group.emplace_back();
        continue;
      }
      rollout::TrajectoryExpectation expected;
      expected.task_id = id;
      expected.run_id = o_.run_id;
      expected.iteration = iteration;
      expected.prompt_index = static_cast<int64_t>(i);
      expected.seed = run::candidate_seed(o_.run_seed, iteration, static_cast<int>(i), j);
      expected.weights_version = result.weights_version_used;
      expected.newest_version = iteration;
      expected.sampler = o_.rollout_sampler;
      expected.window = o_.window;
      expected.latent_shape = o_.latent_shape;
      try {
        auto r = rollout::accept_trajectory(
            *bytes, expected, [this](std::int64_t v) { return weights_checksum(v); },
            o_.tensor_options);
        r.reward = result.reward;
        r.correct = result.correct;
        group.push_back(std::move(r));
        ++reused;
      } catch (const rollout::TrajectoryRejected& e) {
        ++out.rejected_trajectories[std::string(rollout::to_string(e.reason()))];
        SPOTLIGHT_LOG(warn) << e.what() << "; the trainer samples this rollout itself";
        group.emplace_back();
      }
    }
    out.rollouts.push_back(std::move(group));
  }
  int rejected = 0;
  for (const auto& [reason, count] : out.rejected_trajectories)
    rejected += count;
  SPOTLIGHT_LOG(debug) << "iteration " << iteration << ": " << reused
                       << " kept trajectories reused, " << rejected << " not usable";
}

std::optional<std::string> AsyncSeedSource::weights_checksum(std::int64_t version) {
  if (const auto it = checksums_.find(version); it != checksums_.end()) return it->second;
  const auto manifest = outage::call_with(retry_, [&] { return weights_->manifest(version); });
  if (!manifest) return std::nullopt;
  checksums_[version] = manifest->checksum;
  return manifest->checksum;
}

void AsyncSeedSource::erase_trajectories(const std::vector<std::string>& task_ids,
                                         const char* which) {
  if (task_ids.empty()) return;
  try {
    trajectories_->erase(task_ids);
  } catch (const store::StoreError& e) {
    SPOTLIGHT_LOG(warn) << "could not delete " << task_ids.size() << " " << which
                        << " trajectories (they expire): " << e.what();
  }
}

void AsyncSeedSource::iteration_done(int64_t iteration) {
  const auto it = chosen_tasks_.find(iteration);
  if (it == chosen_tasks_.end()) return;
  erase_trajectories(it->second, "trained");
  chosen_tasks_.erase(chosen_tasks_.begin(), std::next(it));
}

}  // namespace spotlight::trainer
