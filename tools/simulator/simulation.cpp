#include "tools/simulator/simulation.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "common/exploration/explorer_reaper.hpp"
#include "common/rl/selection.hpp"
#include "common/run/schedule.hpp"
#include "common/seeds/seeds.hpp"
#include "common/wire/messages.hpp"
#include "tools/simulator/memory_lease_queue.hpp"

namespace spotlight::simulator {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::uint64_t key(std::uint64_t seed, std::uint64_t a, std::uint64_t b, std::uint64_t c,
                  std::uint64_t d) {
  using seeds::mix;
  return mix(mix(mix(mix(seed ^ 0x5107u) ^ a) ^ b) ^ c) ^ d;
}

double u01(std::uint64_t k) {
  return static_cast<double>(seeds::mix(k) >> 11) * 0x1.0p-53;
}

struct SimExplorer {
  std::string id;
  bool alive = true;
  double joined_at = 0;
  double ready_at = 0;
  double last_heartbeat = -1;  // seconds; -1: never (still starting)
  std::optional<queue::Lease> lease;
  double task_started = 0;
  double busy_until = kInf;
};

// The explorers as the planner's directory sees them: heartbeats of the ready ones.
class SimDirectory final : public exploration::ExplorerDirectory {
 public:
  SimDirectory(const std::vector<SimExplorer>& explorers, const double& now)
      : explorers_(explorers), now_(now) {}
  std::vector<exploration::ExplorerSeen> explorers() override {
    std::vector<exploration::ExplorerSeen> out;
    for (const auto& e : explorers_) {
      const bool ready = e.alive && now_ >= e.ready_at;
      const double beat = ready ? now_ : e.last_heartbeat;
      if (beat < 0) continue;  // never heartbeat, never leased
      out.push_back({e.id, static_cast<std::int64_t>(beat * 1000.0), e.lease ? 1 : 0});
    }
    return out;
  }

 private:
  const std::vector<SimExplorer>& explorers_;
  const double& now_;
};

class Run {
 public:
  Run(Mode mode, const SimOptions& o, const Trace* trace, int spot_gpus)
      : mode_(mode),
        o_(o),
        trace_(trace),
        spot_gpus_(mode == Mode::kAsync ? spot_gpus : 0),
        queue_(queue_options(o), [this] { return static_cast<std::int64_t>(now_ * 1000.0); }),
        directory_(explorers_, now_),
        reaper_(queue_, directory_, reaper_options(o)),
        bandit_(bandit_options(o)),
        model_(o.learning, o.seed) {
    if (mode != Mode::kNone && mode != Mode::kSync && mode != Mode::kAsync) {
      throw std::invalid_argument(std::string("simulate: no task-level mode ") + to_string(mode));
    }
    result_.mode = mode;
    result_.spot_gpus = spot_gpus_;
    if (trace_ && o.trace_offset_seconds) {
      trace_offset_ = *o.trace_offset_seconds;
    } else if (trace_) {  // each seed starts at its own place in the trace
      trace_offset_ =
          std::floor(u01(key(o.seed, 7, 0, 0, 0)) * trace_->data.size()) * trace_->gap_seconds;
    }
  }

  SimResult run() {
    const double compute = training_seconds();
    last_training_ = compute;
    if (mode_ == Mode::kAsync) {
      adjust_pool();
      next_tick_ = trace_->gap_seconds;
      next_reap_ = 0;
      plan(0);
      plan(1);
    }
    start_iteration();
    double live_sum = 0;
    int live_samples = 0;
    while (true) {
      // Next event.
      double next = phase_ == Phase::kCompute ? compute_end_ : wait_deadline_;
      if (mode_ == Mode::kAsync) {
        next = std::min({next, next_tick_, next_reap_});
        for (const auto& e : explorers_) {
          if (!e.alive) continue;
          if (e.lease) {
            next = std::min(next, e.busy_until);
          } else if (e.ready_at > now_) {
            next = std::min(next, e.ready_at);
          }
        }
      }
      if (next > now_) advance(next);
      if (mode_ == Mode::kAsync) {
        if (now_ >= next_tick_) {
          adjust_pool();
          next_tick_ += trace_->gap_seconds;
        }
        if (now_ >= next_reap_) {
          const auto report = reaper_.reap(static_cast<std::int64_t>(now_ * 1000.0));
          live_ = report.live_explorers;
          next_reap_ = now_ + o_.heartbeat_seconds;
        }
        step_explorers();
      }
      if (phase_ == Phase::kWait && (seeds_ready() || now_ >= wait_deadline_)) train();
      if (phase_ == Phase::kCompute && now_ >= compute_end_) {
        if (finish_iteration()) break;
        if (mode_ == Mode::kAsync) {
          live_sum += live_;
          ++live_samples;
          plan(iteration_ + 1);
        }
        start_iteration();
      }
    }
    result_.seconds = now_;
    result_.iterations = iteration_;
    result_.reserved_cost = o_.reserved_gpus * now_ * o_.costs.reserved_price_per_hour / 3600.0;
    result_.spot_cost =
        spot_seconds_ * o_.costs.reserved_price_per_hour * o_.costs.spot_price_ratio / 3600.0;
    result_.mean_iteration_seconds = iteration_ > 0 ? now_ / iteration_ : 0;
    result_.mean_wait_seconds = iteration_ > 0 ? wait_total_ / iteration_ : 0;
    result_.mean_live_explorers = live_samples > 0 ? live_sum / live_samples : 0;
    result_.spot_busy_share = spot_seconds_ > 0 ? spot_busy_ / spot_seconds_ : 0;
    result_.tasks_done = queue_.stats().acked_total;
    result_.leases_reclaimed = queue_.stats().reclaimed_total;
    return result_;
  }

 private:
  enum class Phase { kWait, kCompute };

  static queue::LeaseQueueOptions queue_options(const SimOptions& o) {
    queue::LeaseQueueOptions q;
    q.key_prefix = "sim";
    q.lease_timeout =
        std::chrono::milliseconds(static_cast<std::int64_t>(o.lease_timeout_seconds * 1000));
    return q;
  }
  static exploration::ReaperOptions reaper_options(const SimOptions& o) {
    exploration::ReaperOptions r;
    r.dead_after = std::chrono::milliseconds(
        static_cast<std::int64_t>(o.heartbeat_seconds * o.dead_heartbeats * 1000));
    return r;
  }
  static exploration::BanditOptions bandit_options(const SimOptions& o) {
    exploration::BanditOptions b = o.bandit;
    b.group_size = o.group_size;
    return b;
  }

  double gpu_seconds_per_sample_step() const { return o_.costs.seconds_per_sample_step; }
  double training_seconds() const {
    const double t = o_.costs.seconds_per_sample_step / o_.reserved_gpus;
    return o_.prompts * o_.group_size * t *
           (o_.rollout_steps + o_.costs.train_cost_factor * o_.trained_steps);
  }

  void advance(double to) {
    const double dt = to - now_;
    int held = 0;
    for (const auto& e : explorers_) {
      if (!e.alive) continue;
      ++held;
      if (e.lease) spot_busy_ += dt;
    }
    spot_seconds_ += held * dt;
    now_ = to;
  }

  void adjust_pool() {
    const int target = trace_->available(now_ + trace_offset_, spot_gpus_);
    int alive = 0;
    for (const auto& e : explorers_)
      alive += e.alive ? 1 : 0;
    for (auto it = explorers_.rbegin(); it != explorers_.rend() && alive > target; ++it) {
      if (!it->alive) continue;
      it->alive = false;  // preempted without notice: its lease waits for the reaper
      if (now_ >= it->ready_at) it->last_heartbeat = now_;
      --alive;
      ++result_.preemptions;
    }
    while (alive < target) {
      SimExplorer e;
      e.id = "spot-" + std::to_string(next_explorer_++);
      e.joined_at = now_;
      e.ready_at = now_ + o_.costs.explorer_startup_seconds;
      explorers_.push_back(std::move(e));
      ++alive;
    }
    // Forget the dead that hold nothing and were reaped (the directory drops them too).
    std::erase_if(explorers_, [&](const SimExplorer& e) {
      return !e.alive && (e.last_heartbeat < 0 ||
                          now_ - e.last_heartbeat > 10 * o_.heartbeat_seconds * o_.dead_heartbeats);
    });
  }

  void step_explorers() {
    const auto lease_timeout =
        std::chrono::milliseconds(static_cast<std::int64_t>(o_.lease_timeout_seconds * 1000));
    bool queue_empty = false;
    for (auto& e : explorers_) {
      if (!e.alive || now_ < e.ready_at) continue;
      if (e.lease && now_ >= e.busy_until) {
        const auto task = wire::SeedTask::decode(e.lease->payload);
        const auto id = run::parse_seed_task_id(e.lease->task_id);
        wire::SeedResult r;
        r.task_id = e.lease->task_id;
        r.iteration = task.iteration;
        r.prompt_index = task.prompt_index;
        r.seed = task.seed;
        // Explored with the weights of the iteration before the one it is for (the base for
        // iteration 0).
        r.reward = model_.observed_reward(id->iteration, id->prompt, id->candidate,
                                          static_cast<int>(task.sampler_steps), o_.rollout_steps,
                                          id->iteration > 0 ? 1 : 0);
        r.explorer_id = e.id;
        r.sample_seconds = now_ - e.task_started;
        if (queue_.complete(*e.lease, r.encode()).recorded) ++results_of_[id->iteration];
        e.lease.reset();
        e.busy_until = kInf;
      }
      if (!e.lease) {
        if (queue_empty) continue;  // another idle explorer found nothing a moment ago
        auto leases = queue_.reclaim(e.id, lease_timeout, 1);
        if (leases.empty()) leases = queue_.lease(e.id, 1, std::chrono::milliseconds(0));
        if (leases.empty()) {
          queue_empty = true;
          continue;
        }
        const auto task = wire::SeedTask::decode(leases.front().payload);
        const double jitter = 0.9 + 0.2 * u01(key(o_.seed, 3, next_task_++, 0, 0));
        e.lease = std::move(leases.front());
        e.task_started = now_;
        e.busy_until =
            now_ + static_cast<double>(task.sampler_steps) * gpu_seconds_per_sample_step() * jitter;
      }
    }
  }

  void plan(std::int64_t t) {
    if (plans_.count(t)) return;
    exploration::IterationContext c;
    c.iteration = t;
    c.trainer_iteration = iteration_;
    c.prompts = o_.prompts;
    c.time_budget = std::chrono::milliseconds(static_cast<std::int64_t>(last_training_ * 1000));
    c.training_time = c.time_budget;
    c.live_explorers = live_;
    c.queue_depth = queue_.stats().length;
    const exploration::ExplorationDecision d = bandit_.decide(c);
    plans_[t] = d;
    ++result_.arms[d.candidates > 0 ? std::to_string(d.candidates) + "x" + std::to_string(d.steps)
                                    : "0 (" + bandit_.last_choice()->reason + ")"];
    std::vector<queue::Task> tasks;
    for (int i = 0; i < o_.prompts; ++i) {
      for (int j = 0; j < d.candidates; ++j) {
        wire::SeedTask task;
        task.iteration = t;
        task.prompt_index = i;
        task.seed = run::candidate_seed(o_.seed, t, i, j);
        task.sampler_steps = d.steps;
        tasks.push_back({run::seed_task_id(t, i, j), task.encode()});
      }
    }
    if (!tasks.empty()) queue_.enqueue_many(tasks);
  }

  bool seeds_ready() {
    const auto it = plans_.find(iteration_);
    if (it == plans_.end() || it->second.candidates == 0) return true;
    return results_of_[iteration_] >= static_cast<std::int64_t>(o_.prompts) * it->second.candidates;
  }

  void start_iteration() {
    if (mode_ == Mode::kAsync) {
      phase_ = Phase::kWait;
      wait_start_ = now_;
      wait_deadline_ = now_ + o_.max_wait_share * last_training_;
    } else {
      train();
    }
  }

  // Selection, then the trainer's compute.
  void train() {
    wait_total_ += now_ - wait_start_;
    groups_.clear();
    for (int i = 0; i < o_.prompts; ++i) {
      std::vector<int> candidates;
      std::vector<double> seen;
      if (mode_ == Mode::kSync) {
        for (int j = 0; j < o_.sync_candidates; ++j) {
          candidates.push_back(j);
          seen.push_back(model_.observed_reward(iteration_, i, j, o_.sync_steps, o_.rollout_steps,
                                                /*staleness=*/0));
        }
      } else if (mode_ == Mode::kAsync) {
        const int n = plans_.count(iteration_) ? plans_[iteration_].candidates : 0;
        for (int j = 0; j < n; ++j) {
          const auto bytes = queue_.result(run::seed_task_id(iteration_, i, j));
          if (!bytes) continue;
          candidates.push_back(j);
          seen.push_back(wire::SeedResult::decode(*bytes).reward);
        }
      }
      std::vector<double> trained;
      if (static_cast<int>(seen.size()) >= o_.group_size) {
        for (std::size_t index :
             rl::select_max_variance(seen, static_cast<std::size_t>(o_.group_size)))
          trained.push_back(model_.reward(iteration_, i, candidates[index]));
      } else {
        if (mode_ == Mode::kAsync) ++result_.fallback_prompts;
        for (int j = 0; j < o_.group_size; ++j)
          trained.push_back(model_.reward(iteration_, i, j));  // candidates 0..G-1: none's seeds
      }
      variance_sum_ += rl::variance(trained);
      groups_.push_back(std::move(trained));
    }
    double compute = training_seconds();
    if (mode_ == Mode::kSync) {
      compute += static_cast<double>(o_.prompts) * o_.sync_candidates * o_.sync_steps *
                 o_.costs.seconds_per_sample_step / o_.reserved_gpus;
    }
    last_training_ = training_seconds();
    phase_ = Phase::kCompute;
    compute_end_ = now_ + compute;
  }

  // True when the run is over.
  bool finish_iteration() {
    model_.train(groups_);
    const std::int64_t done = iteration_;
    ++iteration_;
    if (mode_ == Mode::kAsync) {
      // The planner's feedback: the trainer's group variance, the explorers' timing.
      exploration::IterationOutcome outcome;
      outcome.iteration = done;
      outcome.decision = plans_[done];
      outcome.group_variance = variance_sum_ / o_.prompts;
      double seconds = 0;
      int n = 0;
      for (int i = 0; i < o_.prompts && outcome.decision.candidates > 0; ++i) {
        for (int j = 0; j < outcome.decision.candidates; ++j) {
          if (const auto bytes = queue_.result(run::seed_task_id(done, i, j))) {
            seconds += wire::SeedResult::decode(*bytes).sample_seconds / outcome.decision.steps;
            ++n;
          }
        }
      }
      if (n > 0) outcome.seconds_per_sample_step = seconds / n;
      bandit_.observe(outcome);
    }
    variance_sum_ = 0;
    if (model_.score() >= o_.target_score) {
      result_.reached = true;
      return true;
    }
    return iteration_ >= o_.max_iterations;
  }

  Mode mode_;
  const SimOptions& o_;
  const Trace* trace_;
  int spot_gpus_;
  double now_ = 0;
  std::vector<SimExplorer> explorers_;
  MemoryLeaseQueue queue_;
  SimDirectory directory_;
  exploration::ExplorerReaper reaper_;
  exploration::BanditExplorationPolicy bandit_;
  std::map<std::int64_t, exploration::ExplorationDecision> plans_;
  LearningModel model_;
  std::vector<std::vector<double>> groups_;
  std::map<std::int64_t, std::int64_t> results_of_;  // iteration -> results recorded
  std::int64_t iteration_ = 0;
  Phase phase_ = Phase::kWait;
  double wait_start_ = 0, wait_deadline_ = kInf, compute_end_ = kInf;
  double last_training_ = 0, wait_total_ = 0;
  double next_tick_ = kInf, next_reap_ = kInf;
  double spot_seconds_ = 0, spot_busy_ = 0;
  double variance_sum_ = 0;
  double trace_offset_ = 0;
  int live_ = 0;
  std::uint64_t next_explorer_ = 0, next_task_ = 0;
  SimResult result_;
};

}  // namespace

SimResult simulate(Mode mode, const SimOptions& options, const Trace* trace, int spot_gpus) {
  if (mode == Mode::kAsync && trace == nullptr) {
    throw std::invalid_argument("simulate: async needs a trace");
  }
  Run run(mode, options, trace, spot_gpus);
  return run.run();
}

}  // namespace spotlight::simulator
