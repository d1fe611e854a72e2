#pragma once
// Group-relative advantages (docs/algorithm.md): for each prompt group of G consecutive rewards,
// A = (r - mean_group) / (std + 1e-4), std over the group or over the whole batch, then clipped.
// Samples whose advantage is exactly 0 (e.g. every reward of the group equal) teach nothing and
// are dropped by the loss.

#include <vector>

namespace spotlight::rl {

struct AdvantageOptions {
  int group_size = 8;
  bool global_std = false;  // std over the whole batch instead of per group
  double clip = 5.0;
  double epsilon = 1e-4;
};

// rewards.size() must be a multiple of group_size; throws std::invalid_argument otherwise.
std::vector<double> group_advantages(const std::vector<double>& rewards,
                                     const AdvantageOptions& options);

// Fraction of groups whose rewards are all equal (zero standard deviation).
double zero_std_group_ratio(const std::vector<double>& rewards, int group_size);

}  // namespace spotlight::rl
