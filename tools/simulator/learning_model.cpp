#include "tools/simulator/learning_model.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <stdexcept>
#include <utility>

#include "common/rl/advantages.hpp"
#include "common/seeds/seeds.hpp"

namespace spotlight::simulator {
namespace {

// Stream tags of the model's draws.
enum Tag : std::uint64_t {
  kPromptChoice = 101,
  kDifficulty = 102,
  kReward = 103,
  kFlip = 104,
  kRedraw = 105,
  kStep = 106,
  kValidation = 107,
  kSelection = 108,
  kCategory = 109,
};

// A UniformRandomBitGenerator over SplitMix64 (cheap to make per prompt).
struct Mix64 {
  using result_type = std::uint64_t;
  std::uint64_t state;
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return ~result_type{0}; }
  result_type operator()() { return seeds::mix(state += 0x9E3779B97F4A7C15ull); }
};

std::uint64_t signed_key(std::int64_t v) {
  return static_cast<std::uint64_t>(v);
}

// Tag of plain_group's stream (below kReward's candidate indices, which are >= 0 and small).
constexpr std::uint64_t kPlainGroup = ~std::uint64_t{0};

// Successes of `levels` Bernoulli(p) trials from the stream.
int successes(Mix64& rng, double p, int levels) {
  int n = 0;
  for (int k = 0; k < levels; ++k)
    n += static_cast<double>(rng() >> 11) * 0x1.0p-53 < p ? 1 : 0;
  return n;
}

// rho = S / sqrt(S^2 + c N) of an update (the header's model) from its informative samples' sums:
// `signal` of advantage x centred reward, `squares` of advantage^2; 0 when none is informative.
void set_rho(UpdateReport& r, double signal, double squares, double noise_weight) {
  if (r.informative == 0) return;
  const double n = r.informative;
  signal /= n;
  const double noise = squares / (n * n);
  const double denominator = std::sqrt(signal * signal + noise_weight * noise);
  r.rho = denominator > 0 ? signal / denominator : 0.0;
}

// The advantages rl::group_advantages gives each populated level of each group, from the counts:
// on_group(i, group_std, flat) once per group, then (unless flat) on_level(i, count, advantage,
// reward - group mean) per populated level. Throws on groups of unequal size.
template <typename OnGroup, typename OnLevel>
void for_each_advantage(const LevelCounts& groups, const LearningParams& params, OnGroup&& on_group,
                        OnLevel&& on_level) {
  const int n_groups = groups.groups();
  if (n_groups == 0) return;
  const int k = groups.levels();
  const int g = groups.size(0);
  // The batch's moments (rl::group_advantages with global_std) from the levels' totals.
  std::vector<double> totals(static_cast<std::size_t>(k) + 1, 0.0);
  for (int i = 0; i < n_groups; ++i) {
    const int* c = groups.group(i);
    for (int l = 0; l <= k; ++l)
      totals[static_cast<std::size_t>(l)] += c[l];
  }
  const double all = static_cast<double>(n_groups) * g;
  double global_mean = 0;
  for (int l = 0; l <= k; ++l)
    global_mean += totals[static_cast<std::size_t>(l)] * (static_cast<double>(l) / k);
  global_mean /= all;
  double global_squares = 0;
  for (int l = 0; l <= k; ++l) {
    const double d = static_cast<double>(l) / k - global_mean;
    global_squares += totals[static_cast<std::size_t>(l)] * d * d;
  }
  const double global_std = std::sqrt(global_squares / all);
  rl::AdvantageOptions options;  // only for its epsilon
  for (int i = 0; i < n_groups; ++i) {
    const int* c = groups.group(i);
    int size = 0, populated = 0;
    double mean = 0;
    for (int l = 0; l <= k; ++l) {
      size += c[l];
      populated += c[l] > 0 ? 1 : 0;
      mean += c[l] * (static_cast<double>(l) / k);
    }
    if (size != g) throw std::invalid_argument("learning model: unequal group sizes");
    mean /= g;
    double var = 0;
    for (int l = 0; l <= k; ++l) {
      const double d = static_cast<double>(l) / k - mean;
      var += c[l] * d * d;
    }
    var /= g;
    // An all-equal group: every advantage exactly 0 (its mean, summed from equal rewards, can
    // miss the reward by a rounding residue, which must not make the group informative).
    const bool flat = populated <= 1;
    const double group_std = flat ? 0.0 : std::sqrt(var);
    on_group(i, group_std, flat);
    if (flat) continue;
    const double std = params.global_std ? global_std : group_std;
    for (int l = 0; l <= k; ++l) {
      if (c[l] == 0) continue;
      const double centred = static_cast<double>(l) / k - mean;
      const double a = std::clamp(centred / (std + options.epsilon), -params.advantage_clip,
                                  params.advantage_clip);
      if (a == 0.0) continue;
      on_level(i, c[l], a, centred);
    }
  }
}

}  // namespace

const char* to_string(Law law) {
  return law == Law::kContrast ? "contrast" : "cosine";
}

Law parse_law(const std::string& name) {
  if (name == "cosine") return Law::kCosine;
  if (name == "contrast") return Law::kContrast;
  throw std::invalid_argument("unknown learning law " + name + " (cosine or contrast)");
}

double uniform01(std::uint64_t key) {
  return static_cast<double>(seeds::mix(key) >> 11) * 0x1.0p-53;
}

double standard_normal(std::uint64_t key) {
  // Box-Muller on two uniforms derived from the key.
  const double u1 = std::max(uniform01(key ^ 0x9E3779B97F4A7C15ull), 1e-300);
  const double u2 = uniform01(key + 0xD1B54A32D192ED03ull);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

LearningModel::LearningModel(LearningParams params, std::uint64_t run_seed)
    : p_(std::move(params)),
      seed_(run_seed),
      z_(p_.z0),
      u_(static_cast<std::size_t>(std::max(1, p_.categories)), 0.0) {
  if (p_.reward_levels < 1) throw std::invalid_argument("learning model: reward_levels < 1");
  if (p_.categories < 1 || !(p_.local_share >= 0 && p_.local_share <= 1) ||
      !(p_.selection_efficiency >= 0)) {
    throw std::invalid_argument(
        "learning model: categories >= 1, local_share in [0, 1], selection_efficiency >= 0");
  }
  if (!p_.category_offsets.empty()) {
    if (p_.category_offsets.size() != u_.size()) {
      throw std::invalid_argument("learning model: category_offsets must have C entries");
    }
    u_ = p_.category_offsets;
  }
  if (!(p_.sigma_d >= 0) || !(p_.eta >= 0) || !(p_.noise >= 0)) {
    throw std::invalid_argument("learning model: sigma_d, eta and noise must be >= 0");
  }
  // s(z) by the trapezoid rule over the standard normal on [-6, 6], nodes 0.25 apart (for an
  // integrand as smooth as the logistic the rule's error is far below the validation noise).
  constexpr int kNodes = 49;
  double total = 0;
  for (int k = 0; k < kNodes; ++k) {
    const double x = -6.0 + 12.0 * k / (kNodes - 1);
    quadrature_.push_back(x);
    weights_.push_back(std::exp(-0.5 * x * x) * ((k == 0 || k == kNodes - 1) ? 0.5 : 1.0));
    total += weights_.back();
  }
  for (double& w : weights_)
    w /= total;
}

double LearningModel::score_at(double z) const {
  double s = 0;
  for (const double u : u_) {
    for (std::size_t k = 0; k < quadrature_.size(); ++k) {
      s += weights_[k] * sigmoid(z + u + p_.validation_offset - p_.sigma_d * quadrature_[k]);
    }
  }
  return s / static_cast<double>(u_.size());
}

double LearningModel::observed_score(std::int64_t version) const {
  if (p_.validation_noise <= 0) return score();
  return score() + p_.validation_noise *
                       standard_normal(seeds::derive(seed_, {kValidation, signed_key(version)}));
}

std::uint64_t LearningModel::prompt_choice(std::int64_t iteration, int prompt) const {
  return seeds::derive(seed_,
                       {kPromptChoice, signed_key(iteration), static_cast<std::uint64_t>(prompt)});
}

int LearningModel::category(std::int64_t iteration, int prompt) const {
  if (u_.size() <= 1) return 0;
  const std::uint64_t choice = prompt_choice(iteration, prompt);
  const std::uint64_t key =
      p_.prompt_pool > 0
          ? seeds::derive(0, {kCategory, choice % static_cast<std::uint64_t>(p_.prompt_pool)})
          : seeds::derive(choice, {kCategory});
  return static_cast<int>(key % static_cast<std::uint64_t>(u_.size()));
}

double LearningModel::success_probability(std::int64_t iteration, int prompt) const {
  return sigmoid(z_ + u_[static_cast<std::size_t>(category(iteration, prompt))] -
                 difficulty(iteration, prompt));
}

double LearningModel::difficulty(std::int64_t iteration, int prompt) const {
  const std::uint64_t choice = prompt_choice(iteration, prompt);
  // A pool's prompts have difficulties of their own, whichever run draws them.
  const std::uint64_t key =
      p_.prompt_pool > 0
          ? seeds::derive(0, {kDifficulty, choice % static_cast<std::uint64_t>(p_.prompt_pool)})
          : seeds::derive(choice, {kDifficulty});
  return p_.sigma_d * standard_normal(key);
}

double LearningModel::draw_reward(double p, std::uint64_t key) const {
  int successes = 0;
  for (int k = 0; k < p_.reward_levels; ++k) {
    successes += uniform01(seeds::derive(key, {static_cast<std::uint64_t>(k)})) < p ? 1 : 0;
  }
  return static_cast<double>(successes) / p_.reward_levels;
}

double LearningModel::reward(std::int64_t iteration, int prompt, int candidate) const {
  const double p = success_probability(iteration, prompt);
  return draw_reward(
      p, seeds::derive(seed_, {kReward, signed_key(iteration), static_cast<std::uint64_t>(prompt),
                               static_cast<std::uint64_t>(candidate)}));
}

double LearningModel::flip_probability(int steps, int rollout_steps, int staleness) const {
  const double fraction =
      rollout_steps > 0 ? std::clamp(static_cast<double>(steps) / rollout_steps, 0.0, 1.0) : 1.0;
  const double partial = std::pow(1.0 - fraction, p_.steps_gamma);
  return 1.0 - (1.0 - partial) * std::pow(1.0 - p_.stale_flip, std::max(0, staleness));
}

double LearningModel::observed_reward(std::int64_t iteration, int prompt, int candidate, int steps,
                                      int rollout_steps, int staleness) const {
  const double f = flip_probability(steps, rollout_steps, staleness);
  const auto path = [&](std::uint64_t tag) {
    return seeds::derive(seed_,
                         {tag, signed_key(iteration), static_cast<std::uint64_t>(prompt),
                          static_cast<std::uint64_t>(candidate), static_cast<std::uint64_t>(steps),
                          static_cast<std::uint64_t>(staleness)});
  };
  if (f <= 0 || uniform01(path(kFlip)) >= f) return reward(iteration, prompt, candidate);
  return draw_reward(success_probability(iteration, prompt), path(kRedraw));
}

template <typename Emit>
void LearningModel::draw_plain(std::int64_t iteration, int prompt, int group_size,
                               Emit&& emit) const {
  const double p = success_probability(iteration, prompt);
  Mix64 rng{seeds::derive(
      seed_, {kReward, signed_key(iteration), static_cast<std::uint64_t>(prompt), kPlainGroup})};
  for (int j = 0; j < group_size; ++j)
    emit(successes(rng, p, p_.reward_levels));
}

std::vector<double> LearningModel::plain_group(std::int64_t iteration, int prompt,
                                               int group_size) const {
  std::vector<double> g;
  g.reserve(static_cast<std::size_t>(std::max(0, group_size)));
  draw_plain(iteration, prompt, group_size,
             [&](int level) { g.push_back(static_cast<double>(level) / p_.reward_levels); });
  return g;
}

void LearningModel::add_plain_group(std::int64_t iteration, int prompt, int group_size,
                                    LevelCounts& batch) const {
  if (batch.levels() != p_.reward_levels) throw std::invalid_argument("level counts: not K");
  int* c = batch.add_group({category(iteration, prompt), false});
  draw_plain(iteration, prompt, group_size, [&](int level) { ++c[level]; });
}

template <typename Emit>
void LearningModel::draw_selected(std::int64_t iteration, int prompt, int candidates, int steps,
                                  int rollout_steps, int staleness, int group_size, bool reuse,
                                  Emit&& emit) const {
  if (candidates < group_size) throw std::invalid_argument("selected_group: candidates < G");
  const int k_levels = p_.reward_levels;
  const double p = success_probability(iteration, prompt);
  Mix64 rng{seeds::derive(
      seed_, {kSelection, signed_key(iteration), static_cast<std::uint64_t>(prompt),
              static_cast<std::uint64_t>(candidates), static_cast<std::uint64_t>(steps),
              static_cast<std::uint64_t>(staleness)})};
  // Observed levels: every observation is Binomial(K, p) / K whether flipped or not. The counts
  // per level follow a multinomial, drawn as a chain of binomials over the levels.
  std::vector<int> counts(static_cast<std::size_t>(k_levels) + 1, 0);
  {
    int left = candidates;
    double mass_left = 1.0;
    double mass = std::pow(1 - p, k_levels);  // P(level 0)
    for (int level = 0; level <= k_levels && left > 0; ++level) {
      int n = left;
      if (level < k_levels) {
        const double q = mass_left > 0 ? std::clamp(mass / mass_left, 0.0, 1.0) : 1.0;
        n = std::binomial_distribution<int>(left, q)(rng);
      }
      counts[static_cast<std::size_t>(level)] = n;
      left -= n;
      mass_left -= mass;
      // P(level + 1) from P(level): x (K - level) / (level + 1) x p / (1 - p).
      mass = p < 1 ? mass * (k_levels - level) / (level + 1.0) * p / (1 - p)
                   : (level + 1 == k_levels ? 1.0 : 0.0);
    }
  }
  // The k lowest and G-k highest levels, for the k of maximum variance: the sum and sum of
  // squares of each split from the sorted counts, without building the groups.
  std::vector<int> c(counts.size());
  const auto split = [&](int lowest, std::vector<int>* picked) {
    double sum = 0, squares = 0;
    std::copy(counts.begin(), counts.end(), c.begin());
    int need = lowest;
    for (int level = 0; level <= k_levels && need > 0; ++level) {
      const int n = std::min(need, c[static_cast<std::size_t>(level)]);
      sum += static_cast<double>(n) * level;
      squares += static_cast<double>(n) * level * level;
      if (picked) picked->insert(picked->end(), static_cast<std::size_t>(n), level);
      c[static_cast<std::size_t>(level)] -= n;
      need -= n;
    }
    need = group_size - lowest;
    for (int level = k_levels; level >= 0 && need > 0; --level) {
      const int n = std::min(need, c[static_cast<std::size_t>(level)]);
      sum += static_cast<double>(n) * level;
      squares += static_cast<double>(n) * level * level;
      if (picked) picked->insert(picked->end(), static_cast<std::size_t>(n), level);
      need -= n;
    }
    return squares - sum * sum / group_size;  // G x the variance
  };
  int best_lowest = 0;
  double best_variance = -1;
  for (int lowest = 0; lowest <= group_size; ++lowest) {
    const double var = split(lowest, nullptr);
    if (var > best_variance + 1e-9) {
      best_variance = var;
      best_lowest = lowest;
    }
  }
  std::vector<int> best;
  best.reserve(static_cast<std::size_t>(group_size));
  split(best_lowest, &best);
  const double f = flip_probability(steps, rollout_steps, staleness);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int level : best)
    emit(reuse || f <= 0 || u(rng) >= f ? level : successes(rng, p, k_levels));
}

std::vector<double> LearningModel::selected_group(std::int64_t iteration, int prompt,
                                                  int candidates, int steps, int rollout_steps,
                                                  int staleness, int group_size, bool reuse) const {
  std::vector<double> g;
  g.reserve(static_cast<std::size_t>(std::max(0, group_size)));
  draw_selected(iteration, prompt, candidates, steps, rollout_steps, staleness, group_size, reuse,
                [&](int level) { g.push_back(static_cast<double>(level) / p_.reward_levels); });
  return g;
}

void LearningModel::add_selected_group(std::int64_t iteration, int prompt, int candidates,
                                       int steps, int rollout_steps, int staleness, int group_size,
                                       bool reuse, LevelCounts& batch) const {
  if (batch.levels() != p_.reward_levels) throw std::invalid_argument("level counts: not K");
  int* c = batch.add_group({category(iteration, prompt), true});
  draw_selected(iteration, prompt, candidates, steps, rollout_steps, staleness, group_size, reuse,
                [&](int level) { ++c[level]; });
}

UpdateReport LearningModel::measure(const std::vector<std::vector<double>>& groups,
                                    const LearningParams& params) {
  UpdateReport r;
  if (groups.empty()) return r;
  const std::size_t g = groups.front().size();
  std::vector<double> flat;
  std::vector<double> centred;
  double std_sum = 0;
  for (const auto& group : groups) {
    if (group.size() != g) throw std::invalid_argument("learning model: unequal group sizes");
    double mean = 0;
    for (double x : group)
      mean += x / static_cast<double>(g);
    double var = 0;
    for (double x : group) {
      flat.push_back(x);
      centred.push_back(x - mean);
      var += (x - mean) * (x - mean) / static_cast<double>(g);
    }
    // All equal: flat, even where the mean of equal rewards misses them by a rounding residue
    // (rl::group_advantages gives such a group exactly zero advantages).
    if (std::all_of(group.begin(), group.end(), [&](double x) { return x == group.front(); })) {
      var = 0;
    }
    std_sum += std::sqrt(var);
    r.zero_groups += var == 0 ? 1 : 0;
  }
  r.mean_std = std_sum / static_cast<double>(groups.size());
  rl::AdvantageOptions options;
  options.group_size = static_cast<int>(g);
  options.global_std = params.global_std;
  options.clip = params.advantage_clip;
  const auto a = rl::group_advantages(flat, options);
  double signal = 0, squares = 0;
  for (std::size_t j = 0; j < a.size(); ++j) {
    if (a[j] == 0.0) continue;
    ++r.informative;
    signal += a[j] * centred[j];
    squares += a[j] * a[j];
  }
  set_rho(r, signal, squares, params.noise);
  return r;
}

UpdateReport LearningModel::measure(const LevelCounts& groups, const LearningParams& params) {
  UpdateReport r;
  const int n_groups = groups.groups();
  if (n_groups == 0) return r;
  double signal = 0, squares = 0, std_sum = 0;
  for_each_advantage(
      groups, params,
      [&](int, double group_std, bool flat) {
        std_sum += group_std;
        r.zero_groups += flat ? 1 : 0;
      },
      [&](int, int count, double a, double centred) {
        r.informative += count;
        signal += count * a * centred;
        squares += count * a * a;
      });
  r.mean_std = std_sum / n_groups;
  set_rho(r, signal, squares, params.noise);
  return r;
}

UpdateReport LearningModel::train(const std::vector<std::vector<double>>& groups,
                                  double efficiency) {
  if (p_.law == Law::kContrast) {
    LevelCounts counts(p_.reward_levels);
    for (const auto& g : groups)
      counts.add_rewards(g);
    return contrast_step(counts, efficiency);
  }
  return step(measure(groups, p_), efficiency);
}

UpdateReport LearningModel::train(const LevelCounts& groups, double efficiency) {
  if (p_.law == Law::kContrast) return contrast_step(groups, efficiency);
  return step(measure(groups, p_), efficiency);
}

UpdateReport LearningModel::contrast_step(const LevelCounts& groups, double efficiency) {
  const std::int64_t update = updates_++;
  UpdateReport r;
  const int n_groups = groups.groups();
  if (n_groups == 0) return r;
  const int g = groups.size(0);
  std::vector<double> by_category(u_.size(), 0.0);
  double total = 0, squares = 0, std_sum = 0;
  for_each_advantage(
      groups, p_,
      [&](int, double group_std, bool flat) {
        std_sum += group_std;
        r.zero_groups += flat ? 1 : 0;
      },
      [&](int i, int count, double a, double centred) {
        const GroupTag& tag = groups.tag(i);
        const double weight = tag.selected ? p_.selection_efficiency : 1.0;
        const double contrast = weight * count * a * centred / g;
        total += contrast;
        by_category[static_cast<std::size_t>(tag.category) % by_category.size()] += contrast;
        r.informative += count;
        squares += count * a * a;
      });
  r.mean_std = std_sum / n_groups;
  if (r.informative == 0) return r;  // the trainer skips a batch of zero advantages
  const double mean_contrast = total / n_groups;
  r.rho = mean_contrast;
  const double noise = std::sqrt(squares) / r.informative;  // sqrt(N)
  double shared = (1 - p_.local_share) * mean_contrast;
  if (p_.step_noise > 0) {
    shared +=
        p_.step_noise * noise * standard_normal(seeds::derive(seed_, {kStep, signed_key(update)}));
  }
  r.step = p_.eta * efficiency * shared;
  z_ += r.step;
  const double categories = static_cast<double>(u_.size());
  for (std::size_t c = 0; c < u_.size(); ++c)
    u_[c] += p_.eta * efficiency * p_.local_share * categories * by_category[c] / n_groups;
  return r;
}

UpdateReport LearningModel::step(UpdateReport r, double efficiency) {
  const std::int64_t update = updates_++;
  if (r.informative == 0) return r;  // the trainer skips a batch of zero advantages
  double direction = r.rho;
  if (p_.step_noise > 0) {
    direction += p_.step_noise * std::sqrt(std::max(0.0, 1.0 - r.rho * r.rho)) *
                 standard_normal(seeds::derive(seed_, {kStep, signed_key(update)}));
  }
  r.step = p_.eta * efficiency * direction;
  z_ += r.step;
  return r;
}

}  // namespace spotlight::simulator
