#pragma once
// When will an iteration's exploration be done? A model of the explorer pool from what was
// measured: the distribution of one sample's time per sampler step (a window of per-result
// measurements: mean and variance, not just a mean) and the rate at which explorers leave
// (preemptions per explorer-second, decayed over time).
//
//   work: `samples` new samples of `steps` steps behind `backlog` samples already queued
//   r = ceil((backlog + samples) / k)                 samples per explorer (k live explorers)
//   per explorer: T ~ Normal(mu, sigma^2)
//     mu    = r*S*m + n*(S*m/2 + delay)               n = rate * r*S*m expected preemptions, each
//     sigma = sqrt(r*S^2*v + n*(S*m/2 + delay)^2)     redoing half a sample and waiting `delay`
//   P(done within budget) = Phi((budget - mu) / sigma)^k     (every explorer done; independent)
//
// (m, v: mean and variance of the measured per-sample-step seconds; sigma = 0 makes P a step.)
// The backlog is counted at the new work's step count. Deterministic; not thread-safe.

#include <cstdint>
#include <deque>
#include <optional>

namespace spotlight::exploration {

struct FinishTimeOptions {
  int window = 256;                     // per-sample-step measurements kept, >= 1
  double preemption_delay_seconds = 1;  // a preempted sample's wait for a new holder, >= 0
  double preemption_half_life_s = 600;  // decay of the preemption-rate evidence, > 0
  int max_explorers = 4096;             // explorers_needed() looks no further

  // Throws std::invalid_argument naming the first bad field.
  void validate() const;
};

struct ExplorationWork {
  std::int64_t samples = 0;  // new samples (prompts x candidates)
  int steps = 2;             // sampler steps of each
  std::int64_t backlog = 0;  // samples queued ahead of them
};

struct FinishPrediction {
  double mean_seconds = 0;  // of the slowest explorer's expected finish (mu above)
  double sd_seconds = 0;    // sigma above
  double probability = 0;   // of finishing within the budget
};

class FinishTimeModel {
 public:
  explicit FinishTimeModel(FinishTimeOptions options = {});

  // One result's measured seconds per sampler step (> 0 and finite; others are ignored).
  void observe_sample_step(double seconds);
  // `departures` explorers left during `explorer_seconds` of live explorer time, ending at
  // `now_seconds` (any monotonic clock in seconds; earlier evidence decays by the half-life).
  void observe_departures(double departures, double explorer_seconds, double now_seconds);

  bool has_timing() const { return !window_.empty(); }
  std::optional<double> mean_sample_step() const;
  std::optional<double> sd_sample_step() const;
  // Departures per explorer-second; 0 before any exposure.
  double preemption_rate() const;

  // nullopt without timing or without explorers (explorers < 1).
  std::optional<FinishPrediction> predict(const ExplorationWork& work, int explorers,
                                          double budget_seconds) const;
  // The fewest explorers (1..max_explorers) that finish within the budget with probability
  // >= `probability`; nullopt without timing, or when even max_explorers would not.
  std::optional<int> explorers_needed(const ExplorationWork& work, double budget_seconds,
                                      double probability) const;

  const FinishTimeOptions& options() const { return options_; }

 private:
  FinishPrediction predict_with(const ExplorationWork& work, int explorers, double budget_seconds,
                                double mean, double sd) const;

  FinishTimeOptions options_;
  std::deque<double> window_;
  double departures_ = 0;
  double exposure_ = 0;
  std::optional<double> last_seen_;
};

}  // namespace spotlight::exploration
