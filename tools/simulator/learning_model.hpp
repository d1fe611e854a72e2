#pragma once
// The simulator's learning model: what a post-training run's validation score does with the
// groups it trains on. It is separate from the event loops (which only ask it for rewards and
// tell it what was trained) and its parameters are fitted from our own runs
// (tools/simulator/calibration.hpp, scripts/sim-calibrate); docs/simulator.md.
//
//   prompt i        a difficulty d_i ~ Normal(0, sigma_d), fixed for the whole run (a prompt that
//                   is hard stays hard); drawn from a pool of `prompt_pool` prompts (0: a fresh
//                   prompt every time, as the embedded task's generator does)
//   skill z         one number for the whole model: z_0 at the base
//   reward          p_i = sigmoid(z - d_i); a sample's reward = Binomial(K, p_i) / K
//                   (K = 1: correct or not, GenEval; K > 1: partial credit)
//   validation      s(z) = E_d[sigmoid(z + delta - d)] (delta: ODE validation against the SDE
//                   rollouts); observed as s(z) + Normal(0, sigma_v)
//   exploration     with S of S_roll sampler steps and weights `staleness` versions old, the
//                   observed reward is the seed's own, except with probability
//                     f = 1 - (1 - (1 - S/S_roll)^gamma) * (1 - f_stale)^staleness
//                   an independent redraw (the ranking of that seed is lost)
//   an update       advantages A_j of the trained groups exactly as the trainer computes them
//                   (rl::group_advantages: group or batch std, clipped, zeros dropped), n = the
//                   samples with A_j != 0:
//                     signal S = sum_j A_j (r_j - mean of j's group) / n
//                     noise  N = sum_j A_j^2 / n^2
//                     rho = S / sqrt(S^2 + c N)                (cosine with the true direction)
//                     z += eta * e * (rho + w sqrt(1 - rho^2) xi),  xi ~ Normal(0, 1)
//                   e = 1 on-policy; `offpolicy_efficiency` for trajectories of older weights.
//                   (law kCosine: the update's quality is a cosine, so what selection can add is
//                   bounded by 1 / rho of plain GRPO's groups.)
//
// Law kContrast: a group teaches only its own contrast. Each prompt belongs to one of C
// categories (a hash of the prompt, or of its pool slot); category c has a skill u_c of its own
// besides the shared z, and p_i = sigmoid(z + u_c - d_i), s = mean over c of
// E_d[sigmoid(z + u_c + delta - d)]. For a prompt whose reward is logistic in one logit, a
// policy-gradient step with the trainer's advantages moves that logit by
//                     s_g = sum_{j in g} A_j (r_j - mean of g) / G      (the group's contrast)
// whatever its p: a flat group moves nothing, and a group selected for contrast moves its prompt
// by what it contains. Over the P trained groups (e_g = selection_efficiency for a group kept
// from explored candidates, 1 for a random one; N and xi as above):
//                     z   += eta e [(1 - lambda) sum_g e_g s_g / P + w sqrt(N) xi]
//                     u_c += eta e lambda C sum_{g of c} e_g s_g / P
// lambda (local_share) is how much of what a group teaches stays with its category. What
// selection gains is then a consequence of the rewards (binary rewards and hard prompts leave
// plain GRPO's groups flat), of N and G and of what exploration observes, not a bound:
// selection_efficiency says how much of the contrast selection adds is real learning (1: as
// much as the same contrast on-policy; fitted, see calibration.hpp).
// Deterministic: every draw is a hash of (run seed, what is drawn).

#include <cstdint>
#include <string>
#include <vector>

#include "tools/simulator/level_counts.hpp"

namespace spotlight::simulator {

enum class Law { kCosine, kContrast };
const char* to_string(Law law);
Law parse_law(const std::string& name);  // "cosine" or "contrast"; std::invalid_argument else

struct LearningParams {
  Law law = Law::kCosine;
  // Starting distribution (fitted to per-prompt candidate rewards of the base).
  double z0 = 0.5;
  double sigma_d = 1.5;
  int reward_levels = 1;           // K
  double validation_offset = 0.0;  // delta
  int prompt_pool = 0;             // 0: a fresh prompt every time
  // Observation noise of exploration (fitted to Kendall tau of the staleness audit and of partial
  // exploration steps against full rollouts).
  double stale_flip = 0.1;   // f_stale, per version of staleness
  double steps_gamma = 1.0;  // gamma
  // Progress (fitted to the iterations-to-target and curves of none / sync at several N).
  double eta = 0.05;
  double noise = 1.0;             // c
  double step_noise = 0.0;        // w
  double validation_noise = 0.0;  // sigma_v
  // Trainer settings the update depends on.
  bool global_std = false;
  double advantage_clip = 5.0;
  // Progress of an update on trajectories sampled with the previous weights (off-policy reuse),
  // relative to on-policy. An assumption until off-policy reuse is measured.
  double offpolicy_efficiency = 1.0;
  // Law kContrast only.
  int categories = 1;  // C
  // Starting u_c of each category (empty: all 0; else C of them): categories that start
  // apart, as GenEval's tasks do.
  std::vector<double> category_offsets;
  double local_share = 0.0;           // lambda
  double selection_efficiency = 1.0;  // e_g of a selected group
};

// What one update saw and did.
struct UpdateReport {
  int informative = 0;    // samples with a non-zero advantage
  int zero_groups = 0;    // groups whose rewards are all equal
  double mean_std = 0.0;  // mean reward std over the trained groups
  double rho = 0.0;       // cosine of the update with the true direction
  double step = 0.0;      // change of z
};

class LearningModel {
 public:
  LearningModel(LearningParams params, std::uint64_t run_seed);

  const LearningParams& params() const { return p_; }
  double skill() const { return z_; }
  // Skill of category c beyond the shared one (0 under law kCosine).
  double category_skill(int c) const { return u_[static_cast<std::size_t>(c)]; }
  // Category of prompt slot `prompt` of `iteration` (0 with one category).
  int category(std::int64_t iteration, int prompt) const;
  // Expected validation score at the current weights (no observation noise).
  double score() const { return score_at(z_); }
  double score_at(double z) const;
  // A validation of the current weights, with its observation noise; `version` keys the draw.
  double observed_score(std::int64_t version) const;

  // Difficulty of prompt slot `prompt` of `iteration` (persistent per prompt of the pool).
  double difficulty(std::int64_t iteration, int prompt) const;
  // Reward of candidate seed `candidate` of that prompt sampled with the current weights.
  double reward(std::int64_t iteration, int prompt, int candidate) const;
  // What exploration with `steps` of `rollout_steps` sampler steps and weights `staleness`
  // versions old observes for the same seed.
  double observed_reward(std::int64_t iteration, int prompt, int candidate, int steps,
                         int rollout_steps, int staleness) const;
  // Probability that an exploration observation is a redraw instead of the seed's own reward.
  double flip_probability(int steps, int rollout_steps, int staleness) const;

  // The G rewards plain GRPO trains on for that prompt: G independent draws at the current
  // weights (a stream of their own, not reward() of candidates 0..G-1; the same distribution).
  std::vector<double> plain_group(std::int64_t iteration, int prompt, int group_size) const;
  // The G rewards trained on after exploring `candidates` seeds of that prompt (steps,
  // staleness as in observed_reward) and keeping the G of maximum observed variance (the k
  // lowest and G-k highest). Trained rewards are the seeds' own; `reuse`: the observed ones (the
  // explored trajectories themselves are trained on). Drawn from the counts of observed reward
  // levels, O(G + K) per prompt instead of O(N): given what exploration observed, a kept seed's
  // own reward is the observation except with probability f, then an independent draw (the
  // flip is independent of the value observed). Same distribution as observing every candidate
  // with observed_reward() and selecting with rl::select_max_variance (a test checks).
  std::vector<double> selected_group(std::int64_t iteration, int prompt, int candidates, int steps,
                                     int rollout_steps, int staleness, int group_size,
                                     bool reuse) const;

  // The same two groups as counts per reward level, appended to `batch` (whose levels must be
  // K): the same draws from the same streams as plain_group() and selected_group(), so the counts
  // are exactly those of the rewards they return. What the event loops use: no allocation per
  // group, and train() on counts is O(K) per group.
  void add_plain_group(std::int64_t iteration, int prompt, int group_size,
                       LevelCounts& batch) const;
  void add_selected_group(std::int64_t iteration, int prompt, int candidates, int steps,
                          int rollout_steps, int staleness, int group_size, bool reuse,
                          LevelCounts& batch) const;

  // One update on `groups` (each the rewards of one prompt's G trained samples). `efficiency`
  // scales the step (offpolicy_efficiency for reused trajectories, 1 otherwise).
  UpdateReport train(const std::vector<std::vector<double>>& groups, double efficiency = 1.0);
  // The same update on the groups' level counts (equal to train() on their rewards up to the
  // rounding of the sums).
  UpdateReport train(const LevelCounts& groups, double efficiency = 1.0);

  // rho of an update on these groups (no state change): the fitting uses it.
  static UpdateReport measure(const std::vector<std::vector<double>>& groups,
                              const LearningParams& params);
  // The same from level counts: the advantages rl::group_advantages gives each level of each
  // group, weighted by the level's count.
  static UpdateReport measure(const LevelCounts& groups, const LearningParams& params);

 private:
  double draw_reward(double p, std::uint64_t key) const;
  // p of a sample of that prompt at the current weights.
  double success_probability(std::int64_t iteration, int prompt) const;
  std::uint64_t prompt_choice(std::int64_t iteration, int prompt) const;
  UpdateReport step(UpdateReport r, double efficiency);
  UpdateReport contrast_step(const LevelCounts& groups, double efficiency);
  // The draws of plain_group() / selected_group(): `emit(level)` once per trained sample, in
  // order, with the sample's reward level l (reward l / K).
  template <typename Emit>
  void draw_plain(std::int64_t iteration, int prompt, int group_size, Emit&& emit) const;
  template <typename Emit>
  void draw_selected(std::int64_t iteration, int prompt, int candidates, int steps,
                     int rollout_steps, int staleness, int group_size, bool reuse,
                     Emit&& emit) const;

  LearningParams p_;
  std::uint64_t seed_;
  double z_;
  std::vector<double> u_;  // per category (law kContrast)
  std::int64_t updates_ = 0;
  std::vector<double> quadrature_;  // standard normal nodes for s(z)
  std::vector<double> weights_;
};

// Uniform in [0, 1) and standard normal from a 64-bit key.
double uniform01(std::uint64_t key);
double standard_normal(std::uint64_t key);
double sigmoid(double x);

}  // namespace spotlight::simulator
