#pragma once
// The embedded benchmark (scripts/benchmark, docs/benchmark.md) replayed in the learning model,
// iteration by iteration and without time: the same prompts per iteration and groups, the same
// exploration arm, validation every `validate_every` iterations and after the last, a target
// reached when the trailing mean of `smooth` validations is at or above it (the base does not
// count), runs that never reach it censored at their last validation, Kaplan-Meier medians.
// This is what the learning model is fitted to and what the calibration test checks.

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "tools/simulator/cluster_model.hpp"
#include "tools/simulator/learning_model.hpp"

namespace spotlight::simulator {

struct ReplayOptions {
  Mode mode = Mode::kNone;  // none, sync, sync-stale, async (one version stale), async-reuse
  int prompts = 8;
  int group_size = 4;
  int candidates = 16;    // N (exploring modes)
  int explore_steps = 8;  // S
  int rollout_steps = 8;  // S_roll
  int iterations = 30;    // budget
  int validate_every = 2;
  int smooth = 2;
  double target = 0.6034;
};

struct ReplayRun {
  std::vector<std::pair<int, double>> validations;  // (version, observed score), version 0 first
  std::vector<double> expected;                     // s(z) at each validation (no noise)
  int iterations_to_target = 0;  // the version reached at, or the last version (censored)
  bool reached = false;
  double zero_share = 0;  // zero-variance groups, over all iterations
};

ReplayRun replay(const LearningParams& params, const ReplayOptions& options, std::uint64_t seed);

struct ReplaySummary {
  int runs = 0;
  double km_median = std::numeric_limits<double>::infinity();  // inf: not reached by half
  double reached_share = 0;                                    // Kaplan-Meier, within the budget
  std::vector<int> versions;
  std::vector<double> mean_expected;  // mean s(z) per validation version
  std::vector<double> mean_observed;  // mean observed score per validation version
  double zero_share = 0;
};

// `runs` replays with seeds first_seed, first_seed + 1, ...
ReplaySummary replay_many(const LearningParams& params, const ReplayOptions& options, int runs,
                          std::uint64_t first_seed = 0);

// Kaplan-Meier median of (time, reached) pairs (censored when not reached): the smallest time at
// which the survival drops to 0.5 or below; infinity when it never does.
double km_median(std::vector<std::pair<double, bool>> events);

}  // namespace spotlight::simulator
