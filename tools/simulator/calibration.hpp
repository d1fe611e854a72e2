#pragma once
// Fitting the learning model (learning_model.hpp) to our own runs. scripts/sim-calibrate reads a
// benchmark's results.json and the runs' metrics.jsonl into one "measured" file; fit() turns it
// into parameters, in stages, each from the data that identifies it:
//   1. starting distribution: the per-prompt candidate rewards of the base (many seeds per
//      prompt, full steps, fresh weights): mean M, between-prompt variance B and within-prompt
//      variance W of n candidates give Var(p) = B - W/n, K = (M(1-M) - Var(p)) / W, and
//      (z0, sigma_d) from E[p] = M and Var(p) (p = sigmoid(z0 - sigma_d x), x ~ Normal(0, 1));
//      delta so that s(z0) is the base's validation score
//   2. observation noise: f_stale so that the model's Kendall tau between a seed's rewards one
//      weights version apart equals the staleness audits'; gamma from the tau between explored
//      (S steps) and rolled-out (S_roll steps) rewards of the same seeds and weights
//   3. progress: eta and c minimise the squared standardised distance between the replayed and
//      the measured mean validation curves of every configuration (none, sync, sync-stale at
//      each N); then the step noise w and validation noise sigma_v match the between-run variance
//      and the run-to-run jitter (variance of successive differences) of the measured curves
// The measured iterations-to-target (Kaplan-Meier medians with bootstrap intervals) are not
// fitted directly: they are what the fit is checked against (embedded_replay.hpp).
//
// Law kContrast (learning_model.hpp) replaces stage 3: eta and selection_efficiency minimise the
// same curve objective, on a grid of lambda (local_share), over the configurations named in
// FitOptions::fit_labels only (the others are held out); then w and sigma_v as above. Its check
// is on the gain of selection itself (check_gains): the ratio of a selecting configuration's end
// progress to plain GRPO's, measured with a paired bootstrap interval over seeds, which the
// simulated ratio must fall in; it fails on too little gain as on too much.

#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tools/simulator/embedded_replay.hpp"
#include "tools/simulator/learning_model.hpp"

namespace spotlight::simulator {

// A measured or fitted file is unreadable, not JSON, or lacks a field (named in the message).
class CalibrationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct MeasuredRun {
  std::uint64_t seed = 0;
  int iterations = 0;  // to the target, or censored at
  bool reached = false;
  std::vector<std::pair<int, double>> curve;  // (version, validation score)
};

struct MeasuredConfig {
  std::string label;     // "sync N=16 S=8"
  ReplayOptions replay;  // mode, candidates, steps and the recipe
  std::vector<MeasuredRun> runs;
  double km_median = 0;            // infinity: not reached by half
  double ci_low = 0, ci_high = 0;  // bootstrap 95% over runs
};

struct TauMeasurement {
  std::string what;  // "staleness" or "steps"
  int steps = 0;     // exploration steps of the stale or partial side
  int rollout_steps = 0;
  int staleness = 0;
  int group = 0;   // seeds per compared group
  double tau = 0;  // mean over groups where it is defined
  int groups = 0;
};

struct Measured {
  std::string source;    // what the file was made from
  ReplayOptions recipe;  // the benchmark's recipe (mode and arm per configuration)
  double base_score = 0;
  std::vector<std::vector<double>> base_candidates;  // per prompt: rewards of many seeds
  std::vector<MeasuredConfig> configs;
  std::vector<TauMeasurement> taus;
};

Measured load_measured(const std::filesystem::path& path);

struct StartingFit {
  double mean = 0, between = 0, within = 0, candidates = 0;  // M, B, W, n
  int prompts = 0;
  double k_raw = 0;  // K before rounding
};

// A bootstrap percentile interval over fewer runs than this does not cover the median (two runs
// that both reach the target at 8 give [8, 8]): such configurations are replayed and shown, not
// checked.
constexpr int kMinRunsToCheck = 3;

struct ConfigCheck {
  std::string label;
  double measured_median = 0, ci_low = 0, ci_high = 0;
  int measured_runs = 0;
  double simulated_median = 0, simulated_reached = 0;
  bool checked = false;  // measured_runs >= kMinRunsToCheck
  bool within = false;
  double curve_rmse = 0;  // simulated against measured mean curve
  // Progress at the end of the run: the mean over runs of the last `smooth` validations minus
  // the base score. Its ratio to plain GRPO's is the selection effect the embedded runs measure
  // best (iterations-to-target is censored in half of them).
  double measured_progress = 0, measured_progress_se = 0;  // over runs
  double simulated_progress = 0;
  // |simulated - measured| <= 2 standard errors (checked with the same run count rule).
  bool progress_within = false;
};

struct FitReport {
  LearningParams params;
  std::vector<std::string> fitted_labels;  // what stage 3 fitted (the rest was held out)
  double target = 0;                       // the benchmark's target score
  StartingFit starting;
  std::vector<std::pair<std::string, double>> taus;  // "measured" and "model" per measurement
  double objective = 0;
  std::vector<ConfigCheck> checks;
};

struct FitOptions {
  int replays = 64;         // simulated runs per configuration while fitting
  int check_replays = 400;  // simulated runs per configuration for the check
  int tau_prompts = 3000;
  Law law = Law::kCosine;
  int categories = 1;                               // C of law kContrast
  std::vector<std::string> fit_labels;              // configurations stage 3 fits (empty: all)
  std::vector<double> local_shares{0.0, 0.5, 1.0};  // lambda grid of law kContrast
};

// The gain of selection in one configuration: its end progress over plain GRPO's ("none") in the
// same measured file.
struct GainCheck {
  std::string label;
  double measured_gain = 0;
  double ci_low = 0, ci_high = 0;  // paired bootstrap 95% over seeds (independent if unpaired)
  double simulated_gain = 0;
  bool too_little = false;  // simulated below the interval
  bool too_much = false;    // simulated above it
  bool within() const { return !too_little && !too_much; }
};

// Every configuration but "none" of `measured` (none: CalibrationError if it lacks one).
std::vector<GainCheck> check_gains(const Measured& measured, const LearningParams& params,
                                   int replays, int bootstrap = 2000);

FitReport fit(const Measured& measured, const FitOptions& options = {});

// Stage 1 alone: the starting distribution (z0, sigma_d, K) and its moments; the validation
// offset is left at 0.
LearningParams fit_starting(const std::vector<std::vector<double>>& base_candidates,
                            StartingFit* moments = nullptr);

// The check alone: replays every measured configuration with `params`.
std::vector<ConfigCheck> check(const Measured& measured, const LearningParams& params, int replays);

// fitted.json: {"params": {...}, "fit": {...}}.
void write_fitted(const std::filesystem::path& path, const FitReport& report,
                  const std::string& source);
LearningParams load_fitted(const std::filesystem::path& path);

}  // namespace spotlight::simulator
