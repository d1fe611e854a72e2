#pragma once
// The GRPO trainer loop (docs/iteration.md, docs/algorithm.md). One iteration k:
//   prompts_k -> seeds (SeedSource) -> rollouts: those exploration already sampled (reused, with
//   the log-probs of the weights that sampled them), the rest sampled here with v_k (SDE)
//   -> rewards -> group advantages -> clipped-ratio updates on the trained step window -> v_{k+1}
// with ratio = exp(logp_{v} - logp_old) and old the weights each rollout was sampled with: v_k
// for on-policy rollouts (ratio exactly 1 at the first update), v_{k-1} (or older) for reused
// stale ones (importance ratio, clipped as in docs/algorithm.md)
// plus validation every `validate_every` iterations (ODE, fixed held-out prompts and seeds), a
// staleness audit (Kendall tau between rewards of the same seeds under v_k and v_{k+1}) and a
// checkpoint after every iteration, from which a restarted trainer resumes.
//
// Deferred validation (`defer_validation`): at each validation point the weights are saved as
// <run_dir>/validation/weights-<version>.safetensors instead (version = iterations completed, 0 =
// the base), and validate_deferred() scores them later, in another process if wanted. The run's
// time line then holds training only; the scores are the same as validating in the run.

#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "common/parallel/communicator.hpp"
#include "common/policy/policy.hpp"
#include "common/reward/reward_function.hpp"
#include "common/rl/advantages.hpp"
#include "common/rl/grpo_loss.hpp"
#include "common/run/exploration_config.hpp"
#include "common/sampler/sampler.hpp"
#include "common/task/prompt_source.hpp"
#include "services/trainer/seed_source.hpp"

namespace spotlight::trainer {

struct GrpoOptions {
  run::ExplorationMode mode = run::ExplorationMode::kSync;  // exploration.mode
  run::Reuse reuse = run::Reuse::kOnPolicy;                 // exploration.reuse
  int iterations = 30;
  // > 0: the run ends after the first iteration whose elapsed_seconds reaches it (a wall-time
  // budget); that iteration is a validation point.
  double max_seconds = 0.0;
  int prompts_per_iteration = 8;
  int group_size = 8;
  int candidates = 24;
  int exploration_steps = 0;        // 0: the rollout step count
  sampler::SamplerOptions sampler;  // rollout sampler (SDE)
  int train_step_begin = 0;         // trained SDE steps: [begin, end), end <= 0 counts from
  int train_step_end = -1;          //   the last step (-1: all but the last, as Flow-GRPO)
  double lr = 3e-5;
  double weight_decay = 0.0;
  double grad_clip = 1.0;
  int micro_batch = 16;              // samples per forward/backward (and per rollout chunk)
  int micro_batches_per_update = 2;  // optimizer step every this many micro-batches
  int inner_epochs = 1;
  rl::AdvantageOptions advantages;
  rl::GrpoLossOptions loss;
  int validate_every = 5;
  // > 0: validate at each multiple of this many seconds of the time line instead of every
  // validate_every iterations (validation_schedule.hpp).
  double validate_every_seconds = 0;
  bool defer_validation = false;  // save the weights to validate; validate_deferred() scores them
  int validation_prompts = 64;
  int validation_steps = 10;
  int validation_images = 0;  // validation images kept in ValidationReport::images
  int audit_every = 5;        // 0 disables the staleness audit
  int audit_prompts = 4;
  // Data parallelism over set_group()'s ranks (trainer.ranks): the ranks' weights are compared
  // every this many iterations (0: only at the start), and gradients are all-reduced in buckets
  // of at most this many bytes.
  int checksum_every = 10;
  std::size_t gradient_bucket_bytes = std::size_t{64} << 20;
  uint64_t seed = 0;              // run seed: prompts, seeds and validation are functions of it
  std::filesystem::path run_dir;  // checkpoints and metrics; empty: nothing written
  // Training and validation prompts (run::prompt_source); null: the embedded task's generator.
  std::shared_ptr<const task::PromptSource> prompts;
};

// One validation image kept for people to look at (the run's validation grids).
struct ValidationSample {
  task::Prompt prompt;
  uint64_t seed = 0;
  task::Image image;  // the model's output as the scorer sees it
  double reward = 0.0;
  bool correct = false;
};

// For a prompt file (free-text prompts) the reward function grades validation: geneval_score is
// then the share of validation samples it calls correct, mean_reward their mean reward.
struct ValidationReport {
  double geneval_score = 0.0;        // the GenEval-like categories (task::Evaluation)
  double ocr_score = 0.0;            // the OCR-like text prompts, when validated
  double mean_reward = 0.0;          // of the reward trained on (reward.kind)
  double mean_partial_reward = 0.0;  // both kinds, whichever is trained on (embedded task)
  double mean_strict_reward = 0.0;
  double geneval_std_error = 0.0;      // standard errors over the validated images
  double mean_reward_std_error = 0.0;  //   (task::Evaluation)
  double mean_partial_reward_std_error = 0.0;
  double mean_strict_reward_std_error = 0.0;
  int samples = 0;  // validated images: prompt x seed pairs
  std::vector<std::pair<std::string, double>> per_category;
  double seconds = 0.0;
  std::vector<ValidationSample> images{};  // of the first GrpoOptions::validation_images prompts
};

struct IterationReport {
  int64_t iteration = 0;
  double reward_mean = 0.0, reward_std = 0.0;
  double zero_std_ratio = 0.0;
  double mean_abs_advantage = 0.0;  // mean |A| over the iteration's samples (zeros included)
  double selected_variance = 0.0;
  double group_variance = 0.0;  // mean within-group variance of the rollout rewards trained on
  double explore_seconds = 0.0, rollout_seconds = 0.0, reward_seconds = 0.0, train_seconds = 0.0;
  double iteration_seconds = 0.0;  // excluding the staleness audit (a measurement)
  double audit_seconds = 0.0;
  double wall_seconds = 0.0;  // since the run started (excluding validation)
  // Wall clock since this trainer process began its first iteration, through this iteration:
  // checkpoints and weight publishing included, validation and staleness audits (measurements)
  // excluded. A resumed trainer continues from wall_seconds.
  double elapsed_seconds = 0.0;
  double first_ratio_max_deviation = 0.0;  // |ratio - 1| max over the first micro-batch
  double kl = 0.0;
  double loss = 0.0;  // mean clipped loss (with its KL term) over the trained steps of the batch
  // Data parallelism: this rank, the group's size, and this rank's all-reduce of gradients (time
  // and bytes, summed over the iteration's updates; 0 for one rank).
  int rank = 0, ranks = 1;
  double allreduce_seconds = 0.0;
  std::int64_t allreduce_bytes = 0;
  // Rollouts trained on: reused from exploration (of them off-policy: sampled with older weights)
  // or sampled here; the largest staleness (k - weights version) among them; the trainer's own
  // rollout sampler steps (samples x steps).
  int rollouts_reused = 0, rollouts_sampled = 0, rollouts_off_policy = 0;
  std::int64_t rollout_staleness_max = 0;
  std::int64_t rollout_sampler_steps = 0;
  // Exploration on the trainer (sync, sync-stale): its weights version (-1: none) and steps.
  std::int64_t explore_weights_version = -1;
  std::int64_t explore_sampler_steps = 0;
  // Kept trajectories of chosen seeds not trained on, by reason (SeedSelection).
  std::map<std::string, int> trajectories_rejected;
  // Importance ratios over every trained sample-step (advantage != 0) of the iteration: mean,
  // largest |log ratio|, and the fraction whose clipped branch was active.
  double ratio_mean = 1.0, ratio_max_abs_log = 0.0, clip_fraction = 0.0;
  // Mean of each named part of the rollouts' rewards, when the reward reports parts.
  std::vector<std::pair<std::string, double>> reward_components;
  int optimizer_steps = 0;
  int fallback_prompts = 0;
  // async: candidates lost because their tasks were dead-lettered (SeedSelection).
  int dead_lettered_tasks = 0;
  std::optional<double> kendall_tau;  // staleness audit, when run
  std::optional<ValidationReport> validation;
  // Per prompt, for fitting the simulator's learning model offline (tools/simulator): the rewards
  // of the G rollouts trained on; in exploring modes the explored candidates' rewards and, per
  // trained seed, its index among them (-1: a fallback seed that was not explored).
  std::vector<std::vector<double>> group_rewards;
  std::vector<std::vector<double>> candidate_rewards;
  std::vector<std::vector<int>> selected;
};

// Sees the trainer's progress; the async mode publishes weights and the iteration through it.
class TrainerObserver {
 public:
  virtual ~TrainerObserver() = default;
  // Weights version `version` (= iterations completed) is checkpointed and about to be used for
  // iteration `version`; `last` is the report of the iteration that produced it (null for the
  // starting weights). Called once at the start of run() and after every iteration.
  virtual void weights_ready(int64_t version, policy::Policy& policy,
                             const IterationReport* last) = 0;
  // Every iteration is done.
  virtual void finished(int64_t iterations) = 0;
};

class GrpoTrainer {
 public:
  // `reference` is the frozen base for the KL term (may be null when loss.kl_beta == 0).
  GrpoTrainer(GrpoOptions options, policy::Policy& policy, reward::RewardFunction& reward,
              std::unique_ptr<SeedSource> seeds, policy::Policy* reference = nullptr);
  ~GrpoTrainer();

  // Restores the newest complete checkpoint under run_dir, if any (CheckpointStore); returns the
  // iteration to run next.
  int64_t resume();
  // Runs iterations [next, options.iterations); `on_iteration` sees each report. When `stop` is
  // requested the iteration in progress is abandoned at its next phase boundary (seeds, rollout,
  // each micro-batch, validation) and run() returns false: the newest checkpoint then holds every
  // completed iteration, and a resumed run redoes the abandoned one exactly. An iteration whose
  // checkpoint is being written is finished first. Returns true when every iteration is done.
  // A failed checkpoint or metrics write throws durable::WriteError.
  bool run(const std::function<void(const IterationReport&)>& on_iteration = {},
           std::stop_token stop = {});
  IterationReport run_iteration(int64_t iteration);
  ValidationReport validate();
  // Scores every <run_dir>/validation/weights-<version>.safetensors not yet in
  // <run_dir>/validation.jsonl, in version order, appending one line each: {"version",
  // "iteration" (= version - 1, -1 for the base), "validation": {...}}. Loads each into the
  // policy (the trainer's weights are replaced). Returns how many it scored. Resumable.
  // `on_validation` (may be empty) sees each version's report after its line is written, while
  // the policy still holds that version's weights.
  int validate_deferred(
      const std::function<void(int64_t version, const ValidationReport&)>& on_validation = {});

  // Prompts of an iteration: a pure function of the run seed.
  std::vector<task::Prompt> prompts_for(int64_t iteration) const;
  int64_t next_iteration() const { return next_iteration_; }

  // Writes the checkpoint of a completed iteration (see checkpoint_store.hpp); throws
  // durable::WriteError.
  void save_checkpoint(int64_t completed_iteration);
  void save_validation_weights(int64_t version);
  void set_observer(TrainerObserver* observer) { observer_ = observer; }
  // Trains data-parallel with the other ranks of `group` (null or size 1: alone); set before
  // resume(). Rank r rolls out, scores and trains the micro-batches m with m % R == r; the
  // gradients of an update are summed over the ranks (one bucketed all-reduce), and every rank
  // takes the same optimizer step, so the updates equal one rank's on the whole batch up to
  // floating-point summation order. Rank 0 alone selects seeds (and shares them), validates,
  // audits, writes checkpoints and metrics and notifies the observer; resume() hands its
  // checkpoint to the others. Every rank must call run() (or run_iteration() for the same
  // iterations). A collective that fails throws parallel::CommunicatorError out of run().
  void set_group(parallel::Communicator* group) { group_ = group; }
  int rank() const { return group_ ? group_->rank() : 0; }
  int ranks() const { return group_ ? group_->size() : 1; }

 private:
  // Re-scores explored (or rolled-out) seeds with the current weights: mean within-prompt tau.
  std::optional<double> staleness_audit(const std::vector<task::Prompt>& prompts,
                                        const SeedSelection& selection,
                                        const std::vector<double>& rollout_rewards);

  // run_iteration() is select_seeds, roll_out, score, train and audit (before train for stale
  // exploration, after it otherwise); each fills its part of the report, its time included
  // (explore_seconds, rollout_seconds, reward_seconds, train_seconds, audit_seconds).
  struct Batch;
  struct TrainSums;
  Batch select_seeds(int64_t iteration, IterationReport& report);
  void roll_out(Batch& batch, IterationReport& report);
  void score(Batch& batch, IterationReport& report);
  void audit(const Batch& batch, IterationReport& report);  // when due, on rank 0
  void train(const Batch& batch, IterationReport& report);
  // One micro-batch's loss over the trained steps, backward; adds its statistics to `sums`.
  void train_micro_batch(const Batch& batch, size_t offset, size_t count, bool first,
                         TrainSums& sums);
  bool owns(size_t sample) const;  // this rank rolls out, scores and trains the sample

  int64_t resume_alone();
  int64_t resume_group();  // resume() of a group of ranks: rank 0's checkpoint to every rank

  // Throws the private Abandoned when stop_ is requested (a phase boundary of run()).
  void check_stop() const;

  struct State;
  GrpoOptions o_;
  policy::Policy& policy_;
  reward::RewardFunction& reward_;
  std::unique_ptr<SeedSource> seeds_;
  policy::Policy* reference_;
  std::unique_ptr<State> state_;
  int64_t next_iteration_ = 0;
  TrainerObserver* observer_ = nullptr;
  parallel::Communicator* group_ = nullptr;
  std::stop_token stop_;
};

}  // namespace spotlight::trainer
