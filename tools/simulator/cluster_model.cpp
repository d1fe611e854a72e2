#include "tools/simulator/cluster_model.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "common/seeds/seeds.hpp"

namespace spotlight::simulator {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kEps = 1e-9;

// Exploration (or offload's rollouts) of one iteration: GPU-seconds drained by the ready GPUs.
struct Block {
  std::int64_t iteration = 0;
  exploration::ExplorationDecision arm;
  int staleness = 0;           // weights versions between exploring and training
  double per_candidate = 0;    // GPU-seconds of one candidate (S t)
  double total = 0, done = 0;  // GPU-seconds
  double available_at = 0;     // offload: the weights reach the spot GPUs
  double remaining() const { return std::max(0.0, total - done); }
};

class Cluster {
 public:
  Cluster(Mode mode, const ClusterOptions& o, const Trace* trace)
      : mode_(mode),
        o_(o),
        trace_(trace),
        model_(o.learning, o.seed),
        t_(o.costs.seconds_per_sample_step),
        cap_(static_cast<int>(std::floor(o.spot_ratio * o.reserved_gpus + kEps))),
        groups_(o.learning.reward_levels) {
    result_.mode = mode;
    if (uses_spot(mode)) {
      if (trace_ == nullptr) throw std::invalid_argument("cluster: a spot mode needs a trace");
      exploration::BanditOptions b = o.bandit;
      b.group_size = o.group_size;
      if (mode == Mode::kAsyncReuse) b.steps = {o.rollout_steps};  // whole trajectories
      b.prior_seconds_per_sample_step = t_;
      bandit_.emplace(b);
    }
    trainer_gpus_ = o.reserved_gpus;
    if (mode == Mode::kNoneMatched) {
      const double gpus = o.reserved_gpus + o.costs.spot_price_ratio * o.matched_spot_gpus;
      trainer_gpus_ = gpus * dp_efficiency(o.costs, gpus / o.reserved_gpus);
      billed_reserved_ = gpus;
    } else {
      billed_reserved_ = o.reserved_gpus;
    }
  }

  ClusterResult run() {
    if (uses_spot(mode_)) {
      next_tick_ = trace_->gap_seconds -
                   std::fmod(o_.trace_offset_seconds, trace_->gap_seconds);  // next tick boundary
      need_ = pool_need();
      adjust_pool();
    }
    start_iteration();
    // Events at one instant come in short chains (a tick, a plan, the trainer's step); a long
    // chain without time moving is a loop that would never end.
    constexpr int kMaxEventsAtOneInstant = 100000;
    int at_this_instant = 0;
    while (!done_) {
      double next = trainer_event();
      if (uses_spot(mode_)) {
        next = std::min({next, next_tick_, reacquire_at_, next_ready(), drain_event()});
      }
      if (next == kInf) throw std::logic_error("cluster: no next event");
      if (next > now_) {
        advance(next);
        at_this_instant = 0;
      } else if (++at_this_instant > kMaxEventsAtOneInstant) {
        throw std::logic_error("cluster: time stopped at " + std::to_string(now_) + " s");
      }
      if (uses_spot(mode_)) {
        if (now_ >= next_tick_ - kEps) {
          next_tick_ += trace_->gap_seconds;
          need_ = pool_need();
          adjust_pool();
        }
        if (now_ >= reacquire_at_ - kEps) {
          reacquire_at_ = kInf;
          adjust_pool();
        }
        maybe_release_idle();
      }
      step_trainer();
    }
    result_.seconds = now_;
    result_.reserved_cost = billed_reserved_ * now_ * o_.costs.reserved_price_per_hour / 3600.0;
    result_.spot_cost =
        spot_held_seconds_ * o_.costs.reserved_price_per_hour * o_.costs.spot_price_ratio / 3600.0;
    result_.mean_held_spot = now_ > 0 ? spot_held_seconds_ / now_ : 0;
    result_.spot_busy_share = spot_held_seconds_ > 0 ? spot_busy_seconds_ / spot_held_seconds_ : 0;
    result_.final_score = model_.score();
    if (result_.iterations > 0) {
      result_.mean_wait_seconds = wait_total_ / result_.iterations;
      result_.mean_informative = informative_total_ / result_.iterations;
    }
    return result_;
  }

 private:
  enum class Phase { kWait, kCompute };

  // --- the spot pool -------------------------------------------------------------------------

  int offer() const { return trace_->available(now_ + o_.trace_offset_seconds, cap_); }
  int ready_count() const {
    int n = 0;
    for (double r : pool_)
      n += r <= now_ + kEps ? 1 : 0;
    return n;
  }
  double next_ready() const {
    double next = kInf;
    for (double r : pool_)
      if (r > now_ + kEps) next = std::min(next, r);
    return next;
  }
  bool work_left() const {
    return block_ && block_->remaining() > kEps && block_->available_at <= now_ + kEps;
  }
  // When the current block drains at the present rate (an event: the trainer or the idle check
  // may act then).
  //
  // Late in a long run (days of simulated time) the clock's resolution is coarser than what
  // rounding leaves of a block (a drained block can keep a few 1e-9 GPU-seconds): now + left /
  // ready would round to now, time would stop and the loop spin forever. Such a block drains in
  // the clock's next tick.
  double drain_event() const {
    if (!block_ || block_->remaining() <= kEps) return kInf;
    if (block_->available_at > now_ + kEps) return block_->available_at;
    const int ready = ready_count();
    if (ready <= 0) return kInf;
    const double at = now_ + block_->remaining() / ready;
    return at > now_ ? at : std::nextafter(now_, kInf);
  }

  void advance(double to) {
    const double dt = to - now_;
    const int ready = ready_count();
    spot_held_seconds_ += static_cast<double>(pool_.size()) * dt;
    if (block_ && block_->available_at <= now_ + kEps && ready > 0) {
      const double drained = std::min(block_->remaining(), ready * dt);
      block_->done += drained;
      spot_busy_seconds_ += drained;
    }
    now_ = to;
  }

  // Brings the pool toward min(offer, cap, need): preempts what the offer no longer covers,
  // acquires what is needed and offered (unless idle-released until reacquire_at_), releases
  // starting GPUs that are not needed and ready ones only when there is no work.
  void adjust_pool() {
    const int available = offer();
    while (static_cast<int>(pool_.size()) > available) {  // preempted: newest first
      const bool busy = pool_.back() <= now_ + kEps && work_left();
      pool_.pop_back();
      ++result_.preemptions;
      if (busy) {
        const double lost =
            uniform01(
                seeds::derive(o_.seed, {0x1057, static_cast<std::uint64_t>(result_.preemptions)})) *
            block_->per_candidate;
        const double taken = std::min(lost, block_->done);
        block_->done -= taken;
        result_.lost_gpu_seconds += taken;
      }
    }
    if (offloads() && phase_ == Phase::kWait && block_ && block_->iteration == iteration_ &&
        pool_.empty()) {
      offload_to_reserved();
    }
    const int target = std::min({available, cap_, need_});
    if (reacquire_at_ == kInf) {
      while (static_cast<int>(pool_.size()) < target)
        pool_.push_back(now_ + o_.costs.explorer_startup_seconds);
    }
    // Release what is not needed: starting GPUs first; ready ones only when idle.
    while (static_cast<int>(pool_.size()) > target) {
      if (pool_.back() > now_ + kEps || !work_left()) {
        pool_.pop_back();
      } else {
        break;
      }
    }
  }

  // Idle GPUs cost money: when the queue is empty and the next plan is far enough away, release
  // them and take them back start-up seconds before it.
  void maybe_release_idle() {
    if (pool_.empty() || work_left() || reacquire_at_ != kInf) return;
    if (block_ && block_->available_at > now_ + kEps) return;  // offload: weights on their way
    if (phase_ != Phase::kCompute) return;
    const double next_plan = compute_end_;
    if (next_plan - now_ <= o_.costs.explorer_startup_seconds + o_.min_idle_seconds) return;
    pool_.clear();
    reacquire_at_ = next_plan - o_.costs.explorer_startup_seconds;
  }

  // --- the trainer ---------------------------------------------------------------------------

  double trainer_event() const {
    if (phase_ == Phase::kCompute) return compute_end_;
    if (block_ && block_->remaining() <= kEps) {
      return std::max(now_, least_wait_until_);  // seeds ready: stop waiting now
    }
    double next = wait_deadline_;
    if (block_) next = std::min(next, drain_event());
    return next;
  }

  bool offloads() const { return mode_ == Mode::kOffload || mode_ == Mode::kOffloadPipelined; }
  double budget_seconds() const {
    return mode_ == Mode::kAsyncReuse || offloads() ? train_seconds()
                                                    : rollout_seconds() + train_seconds();
  }
  double rollout_seconds() const { return simulator::rollout_seconds(o_, trainer_gpus_); }
  double train_seconds() const {
    return simulator::training_seconds(o_, trainer_gpus_) - rollout_seconds();
  }

  // GPUs the largest arm that the pool could finish in time at its present capacity (the
  // offer, at most spot_ratio x R) needs: time_margin x the compute it runs beside for P N S t of
  // work. 0 when not even the smallest arm fits: GPUs that could not finish anything in time
  // are not worth holding.
  int pool_need() const {
    const int capacity = std::min(offer(), cap_);
    if (offloads()) {
      // Rollouts must happen whatever the pool: as many GPUs as finish them in time, at most
      // what is offered.
      const double work = static_cast<double>(o_.prompts) * o_.group_size * o_.rollout_steps * t_;
      const int gpus =
          static_cast<int>(std::ceil(work / (o_.bandit.time_margin * budget_seconds()) - kEps));
      return std::min(gpus, capacity);
    }
    std::vector<std::pair<int, int>> arms;  // (N, S)
    if (o_.fixed_candidates > 0) {
      arms.emplace_back(o_.fixed_candidates,
                        mode_ == Mode::kAsyncReuse ? o_.rollout_steps : o_.fixed_steps);
    } else {
      for (const int n : o_.bandit.candidates) {
        if (n < o_.group_size) continue;
        if (mode_ == Mode::kAsyncReuse) {
          arms.emplace_back(n, o_.rollout_steps);
        } else {
          for (const int st : o_.bandit.steps)
            arms.emplace_back(n, st);
        }
      }
    }
    int need = 0;
    for (const auto& [n, st] : arms) {
      const double work = static_cast<double>(o_.prompts) * n * st * t_;
      const int gpus =
          static_cast<int>(std::ceil(work / (o_.bandit.time_margin * budget_seconds()) - kEps));
      if (gpus <= capacity) need = std::max(need, gpus);
    }
    return need;
  }

  void plan(std::int64_t iteration, int staleness) {
    need_ = pool_need();
    exploration::ExplorationDecision arm{0, 0};
    const int capacity = ready_count();
    if (o_.fixed_candidates > 0) {
      arm = {o_.fixed_candidates, mode_ == Mode::kAsyncReuse ? o_.rollout_steps : o_.fixed_steps};
    } else {
      exploration::IterationContext c;
      c.iteration = iteration;
      c.trainer_iteration = iteration_;
      c.prompts = o_.prompts;
      const auto budget =
          std::chrono::milliseconds(static_cast<std::int64_t>(budget_seconds() * 1000));
      c.time_budget = budget;
      c.training_time = budget;
      c.live_explorers = capacity;
      arm = bandit_->decide(c);
    }
    plans_[iteration] = arm;
    // Nothing is explored without a live explorer (the trainer then uses random seeds at once);
    // what the ready ones cannot finish in time, the trainer's deadline cuts off.
    if (arm.candidates <= 0 || capacity <= 0) {
      block_.reset();
      ++result_.arms["0"];
      return;
    }
    ++result_.arms[std::to_string(arm.candidates) + "x" + std::to_string(arm.steps)];
    Block b;
    b.iteration = iteration;
    b.arm = arm;
    b.staleness = staleness;
    b.per_candidate = arm.steps * t_;
    b.total = static_cast<double>(o_.prompts) * arm.candidates * b.per_candidate;
    b.available_at = now_;
    block_ = b;
    adjust_pool();
  }

  void start_iteration() {
    wait_start_ = now_;
    extra_compute_ = 0;
    switch (mode_) {
      case Mode::kNone:
      case Mode::kNoneMatched:
      case Mode::kSync:
      case Mode::kSyncStale:
        begin_compute();
        return;
      case Mode::kOffload: {
        Block b;
        b.iteration = iteration_;
        b.per_candidate = o_.rollout_steps * t_;
        b.total = static_cast<double>(o_.prompts) * o_.group_size * b.per_candidate;
        b.available_at = now_ + o_.costs.weight_publish_seconds;
        block_ = b;
        phase_ = Phase::kWait;
        wait_deadline_ = kInf;
        if (reacquire_at_ != kInf && reacquire_at_ <= now_ + kEps) reacquire_at_ = kInf;
        adjust_pool();
        if (pool_.empty() && reacquire_at_ == kInf) offload_to_reserved();
        return;
      }
      case Mode::kOffloadPipelined:
        phase_ = Phase::kWait;
        wait_deadline_ = kInf;
        if (!block_ || block_->iteration != iteration_) {
          // The first iteration's rollouts: the base's, on the reserved GPUs.
          extra_compute_ = rollout_seconds();
          wait_deadline_ = now_;
          return;
        }
        if (reacquire_at_ != kInf && reacquire_at_ <= now_ + kEps) reacquire_at_ = kInf;
        adjust_pool();
        if (pool_.empty() && reacquire_at_ == kInf) offload_to_reserved();
        return;
      case Mode::kAsync:
      case Mode::kAsyncReuse:
        if (iteration_ == 0) plan(0, 0);  // the base explored with itself
        phase_ = Phase::kWait;
        // The measured least wait (async_wait_share), and at most max_wait_share for seeds.
        least_wait_until_ = now_ + o_.costs.async_wait_share * budget_seconds();
        wait_deadline_ =
            now_ + std::max(o_.max_wait_share, o_.costs.async_wait_share) * budget_seconds();
        if (!block_ || block_->iteration != iteration_) wait_deadline_ = least_wait_until_;
        return;
    }
  }

  // Offload with no spot GPU: the reserved GPUs roll out what is left themselves.
  void offload_to_reserved() {
    extra_compute_ += block_->remaining() / trainer_gpus_;
    block_->done = block_->total;
    wait_deadline_ = now_;
  }

  void step_trainer() {
    if (phase_ == Phase::kWait) {
      const bool ready = block_ && block_->remaining() <= kEps && now_ >= least_wait_until_ - kEps;
      if (ready || now_ >= wait_deadline_ - kEps) begin_compute();
    } else if (now_ >= compute_end_ - kEps) {
      finish_iteration();
    }
  }

  // Candidates of prompt i explored so far (prompt-major, first planned first done).
  int explored(int prompt) const {
    if (!block_ || block_->arm.candidates <= 0) return 0;
    const auto completed =
        static_cast<std::int64_t>(std::floor(block_->done / block_->per_candidate + kEps));
    const std::int64_t n = block_->arm.candidates;
    return static_cast<int>(std::clamp<std::int64_t>(completed - prompt * n, 0, n));
  }

  void random_group(int prompt) {
    model_.add_plain_group(iteration_, prompt, o_.group_size, groups_);
  }

  // Selection on what exploration observed; the trained rewards are the fresh ones (or, reusing
  // trajectories, the observed ones themselves).
  void selected_group(int prompt, int n, int steps, int staleness, bool reuse) {
    model_.add_selected_group(iteration_, prompt, n, steps, o_.rollout_steps, staleness,
                              o_.group_size, reuse, groups_);
  }

  void begin_compute() {
    wait_total_ += now_ - wait_start_;
    groups_.clear();
    efficiency_ = 1.0;
    double compute = 0;
    int reused = 0, short_prompts = 0;
    switch (mode_) {
      case Mode::kNone:
      case Mode::kNoneMatched:
        for (int i = 0; i < o_.prompts; ++i)
          random_group(i);
        compute = rollout_seconds() + train_seconds();
        break;
      case Mode::kSync:
      case Mode::kSyncStale:
        for (int i = 0; i < o_.prompts; ++i) {
          selected_group(i, o_.sync_candidates, o_.sync_steps, mode_ == Mode::kSyncStale ? 1 : 0,
                         false);
        }
        compute = static_cast<double>(o_.prompts) * o_.sync_candidates * o_.sync_steps * t_ /
                      trainer_gpus_ +
                  rollout_seconds() + train_seconds();
        break;
      case Mode::kOffload:
        for (int i = 0; i < o_.prompts; ++i)
          random_group(i);
        compute = extra_compute_ + train_seconds();
        break;
      case Mode::kOffloadPipelined: {
        for (int i = 0; i < o_.prompts; ++i)
          random_group(i);
        if (iteration_ > 0) efficiency_ = o_.learning.offpolicy_efficiency;
        compute = extra_compute_ + train_seconds();
        // The next iteration's rollouts, with these weights, while they train.
        Block b;
        b.iteration = iteration_ + 1;
        b.staleness = 1;
        b.per_candidate = o_.rollout_steps * t_;
        b.total = static_cast<double>(o_.prompts) * o_.group_size * b.per_candidate;
        b.available_at = now_ + o_.costs.weight_publish_seconds;
        block_ = b;
        break;
      }
      case Mode::kAsync:
      case Mode::kAsyncReuse: {
        const bool reuse = mode_ == Mode::kAsyncReuse;
        for (int i = 0; i < o_.prompts; ++i) {
          const int n = block_ && block_->iteration == iteration_ ? explored(i) : 0;
          if (n >= o_.group_size) {
            selected_group(i, n, block_->arm.steps, block_->staleness, reuse);
            ++reused;
          } else {
            random_group(i);
            ++short_prompts;
          }
        }
        result_.fallback_prompts += short_prompts;
        if (reuse) {
          compute = train_seconds() + rollout_seconds() * short_prompts / o_.prompts;
          efficiency_ = (reused * o_.learning.offpolicy_efficiency + short_prompts) / o_.prompts;
        } else {
          compute = rollout_seconds() + train_seconds();
        }
        // The measured overheads: the staleness audit and the publish of the new weights.
        compute = compute * (1 + o_.costs.async_audit_share) + o_.costs.weight_publish_seconds;
        // Tasks of this iteration are stale now; the next iteration is explored with these
        // weights while they train.
        block_.reset();
        plan(iteration_ + 1, 1);
        break;
      }
    }
    if (mode_ == Mode::kOffload) block_.reset();
    phase_ = Phase::kCompute;
    compute_end_ = now_ + compute;
    if (mode_ == Mode::kOffloadPipelined) adjust_pool();
  }

  void finish_iteration() {
    const UpdateReport u = model_.train(groups_, efficiency_);
    informative_total_ += u.informative;
    if (bandit_ && plans_.count(iteration_)) {
      exploration::IterationOutcome outcome;
      outcome.iteration = iteration_;
      outcome.decision = plans_[iteration_];
      double variance = 0;
      for (int i = 0; i < groups_.groups(); ++i)
        variance += groups_.variance(i) / static_cast<double>(groups_.groups());
      outcome.group_variance = variance;
      outcome.seconds_per_sample_step = t_;
      if (outcome.decision.candidates > 0) bandit_->observe(outcome);
      plans_.erase(iteration_);
    }
    ++iteration_;
    result_.iterations = static_cast<int>(iteration_);
    if (o_.fixed_iterations) {
      if (iteration_ >= *o_.fixed_iterations) {
        result_.reached = true;
        done_ = true;
        return;
      }
    } else if (model_.score() >= o_.target_score) {
      result_.reached = true;
      done_ = true;
      return;
    }
    if (iteration_ >= o_.max_iterations) {
      done_ = true;
      return;
    }
    start_iteration();
  }

  Mode mode_;
  const ClusterOptions& o_;
  const Trace* trace_;
  LearningModel model_;
  double t_;
  int cap_;
  double trainer_gpus_ = 0, billed_reserved_ = 0;
  std::optional<exploration::BanditExplorationPolicy> bandit_;
  std::map<std::int64_t, exploration::ExplorationDecision> plans_;

  double now_ = 0;
  bool done_ = false;
  std::vector<double> pool_;  // ready_at of each held spot GPU, oldest first
  int need_ = 0;
  double next_tick_ = kInf, reacquire_at_ = kInf;
  std::optional<Block> block_;

  std::int64_t iteration_ = 0;
  Phase phase_ = Phase::kWait;
  double wait_start_ = 0, wait_deadline_ = kInf, compute_end_ = kInf, extra_compute_ = 0;
  double least_wait_until_ = 0;  // async: the measured least wait (StepCosts::async_wait_share)
  LevelCounts groups_;           // what the iteration trains on
  double efficiency_ = 1.0;

  double spot_held_seconds_ = 0, spot_busy_seconds_ = 0, wait_total_ = 0;
  double informative_total_ = 0;
  ClusterResult result_;
};

}  // namespace

const char* to_string(Mode mode) {
  switch (mode) {
    case Mode::kNone:
      return "none";
    case Mode::kNoneMatched:
      return "none-matched";
    case Mode::kOffload:
      return "offload";
    case Mode::kOffloadPipelined:
      return "offload-pipelined";
    case Mode::kSync:
      return "sync";
    case Mode::kSyncStale:
      return "sync-stale";
    case Mode::kAsync:
      return "async";
    case Mode::kAsyncReuse:
      return "async-reuse";
  }
  return "?";
}

Mode parse_mode(const std::string& name) {
  for (Mode m : {Mode::kNone, Mode::kNoneMatched, Mode::kOffload, Mode::kOffloadPipelined,
                 Mode::kSync, Mode::kSyncStale, Mode::kAsync, Mode::kAsyncReuse}) {
    if (name == to_string(m)) return m;
  }
  throw std::invalid_argument("unknown mode " + name);
}

bool uses_spot(Mode mode) {
  return mode == Mode::kOffload || mode == Mode::kOffloadPipelined || mode == Mode::kAsync ||
         mode == Mode::kAsyncReuse;
}

double rollout_seconds(const ClusterOptions& o, double gpus) {
  return static_cast<double>(o.prompts) * o.group_size * o.rollout_steps *
         o.costs.seconds_per_sample_step / gpus;
}

double training_seconds(const ClusterOptions& o, double gpus) {
  return rollout_seconds(o, gpus) + o.costs.train_cost_factor * o.prompts * o.group_size *
                                        o.trained_steps * o.costs.seconds_per_sample_step / gpus;
}

ClusterResult simulate_cluster(Mode mode, const ClusterOptions& options, const Trace* trace) {
  Cluster cluster(mode, options, trace);
  return cluster.run();
}

}  // namespace spotlight::simulator
