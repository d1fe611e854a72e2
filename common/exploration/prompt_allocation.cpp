#include "common/exploration/prompt_allocation.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>

#include "common/rl/selection.hpp"

namespace spotlight::exploration {

void BetaPosterior::add(double reward) {
  if (!std::isfinite(reward)) return;
  const double r = std::clamp(reward, 0.0, 1.0);
  a += r;
  b += 1.0 - r;
}

void AllocationOptions::validate() const {
  if (group_size < 1) throw std::invalid_argument("AllocationOptions.group_size: must be >= 1");
  if (!(contrast_target > 0) || !std::isfinite(contrast_target)) {
    throw std::invalid_argument("AllocationOptions.contrast_target: must be > 0");
  }
  if (!(probability > 0 && probability < 1)) {
    throw std::invalid_argument("AllocationOptions.probability: must be in (0, 1)");
  }
}

int candidates_needed(const BetaPosterior& posterior, const AllocationOptions& options, int cap) {
  if (cap <= options.group_size) return cap;
  const double p = posterior.mean();
  for (int n = options.group_size; n < cap; ++n) {
    const double contrast = 1.0 - std::pow(p, n) - std::pow(1.0 - p, n);
    if (contrast >= options.probability) return n;
  }
  return cap;
}

std::vector<std::pair<int, int>> exploration_order(std::span<const int> need, int group_size,
                                                   int cap) {
  std::vector<std::tuple<double, int, int>> keyed;  // (key, candidate, prompt)
  const int prompts = static_cast<int>(need.size());
  keyed.reserve(static_cast<std::size_t>(prompts) * static_cast<std::size_t>(std::max(cap, 0)));
  for (int i = 0; i < prompts; ++i) {
    const int n = std::clamp(need[static_cast<std::size_t>(i)], std::min(group_size, cap), cap);
    const double extra = std::max(n - group_size + 1, 1);
    for (int j = 0; j < cap; ++j) {
      const double key = j < group_size ? j : group_size + (j - group_size + 1) / extra;
      keyed.emplace_back(key, j, i);
    }
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<std::pair<int, int>> out;
  out.reserve(keyed.size());
  for (const auto& [key, j, i] : keyed)
    out.emplace_back(i, j);
  return out;
}

bool contrast_reached(const std::vector<double>& rewards, const AllocationOptions& options) {
  const auto g = static_cast<std::size_t>(options.group_size);
  if (rewards.size() < g) return false;
  std::vector<double> chosen;
  for (std::size_t k : rl::select_max_variance(rewards, g))
    chosen.push_back(rewards[k]);
  return rl::variance(chosen) >= options.contrast_target;
}

bool all_alike(const std::vector<double>& rewards) {
  if (rewards.size() < 2) return false;
  const auto [lo, hi] = std::minmax_element(rewards.begin(), rewards.end());
  return *hi - *lo <= 1e-12;
}

}  // namespace spotlight::exploration
