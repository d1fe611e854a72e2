#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "common/rl/advantages.hpp"
#include "common/rl/kendall.hpp"
#include "common/rl/selection.hpp"

namespace spotlight::rl {
namespace {

struct Moments {
  double mean = 0.0, std = 0.0;
};

Moments moments(std::vector<double>::const_iterator begin,
                std::vector<double>::const_iterator end) {
  const auto n = static_cast<double>(end - begin);
  Moments m;
  if (n == 0) return m;
  m.mean = std::accumulate(begin, end, 0.0) / n;
  double sq = 0.0;
  for (auto it = begin; it != end; ++it)
    sq += (*it - m.mean) * (*it - m.mean);
  m.std = std::sqrt(sq / n);
  return m;
}

// True when every reward in [begin, end) equals the first: a flat group, exactly.
bool all_equal(std::vector<double>::const_iterator begin, std::vector<double>::const_iterator end) {
  return std::all_of(begin, end, [&](double r) { return r == *begin; });
}

}  // namespace

std::vector<double> group_advantages(const std::vector<double>& rewards,
                                     const AdvantageOptions& o) {
  if (o.group_size <= 0 || rewards.size() % static_cast<size_t>(o.group_size) != 0) {
    throw std::invalid_argument("advantages: reward count must be a multiple of the group size");
  }
  const Moments global = moments(rewards.begin(), rewards.end());
  std::vector<double> out(rewards.size());
  for (size_t g = 0; g < rewards.size(); g += o.group_size) {
    const auto begin = rewards.begin() + static_cast<std::ptrdiff_t>(g);
    const Moments group = moments(begin, begin + o.group_size);
    const double std = o.global_std ? global.std : group.std;
    // An all-equal group gives exactly 0, never a rounding residue: its mean need not equal its
    // rewards (eight rewards of 0.1 average to 0.09999999999999999), and ~1e-13 advantages would
    // keep samples that teach nothing in the loss, which drops only exact zeros.
    const bool flat = all_equal(begin, begin + o.group_size);
    for (int i = 0; i < o.group_size; ++i) {
      const double centred = rewards[g + i] - group.mean;
      out[g + i] = flat ? 0.0 : std::clamp(centred / (std + o.epsilon), -o.clip, o.clip);
    }
  }
  return out;
}

double zero_std_group_ratio(const std::vector<double>& rewards, int group_size) {
  if (rewards.empty() || group_size <= 0) return 0.0;
  size_t groups = 0, flat = 0;
  for (size_t g = 0; g + group_size <= rewards.size(); g += group_size, ++groups) {
    const auto begin = rewards.begin() + static_cast<std::ptrdiff_t>(g);
    flat += all_equal(begin, begin + group_size);
  }
  return groups == 0 ? 0.0 : static_cast<double>(flat) / static_cast<double>(groups);
}

double variance(const std::vector<double>& values) {
  const Moments m = moments(values.begin(), values.end());
  return m.std * m.std;
}

std::vector<size_t> select_max_variance(const std::vector<double>& rewards, size_t g) {
  const size_t n = rewards.size();
  if (g > n) throw std::invalid_argument("selection: cannot select more candidates than explored");
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return rewards[a] < rewards[b]; });
  if (g == 0) return {};
  // prefix sums of sorted values and squares: the variance of k lowest + (g-k) highest is O(1).
  std::vector<double> sum(n + 1, 0.0), sq(n + 1, 0.0);
  for (size_t i = 0; i < n; ++i) {
    const double r = rewards[order[i]];
    sum[i + 1] = sum[i] + r;
    sq[i + 1] = sq[i] + r * r;
  }
  size_t best_k = 0;
  double best = -1.0;
  for (size_t k = 0; k <= g; ++k) {
    const double s = sum[k] + (sum[n] - sum[n - (g - k)]);
    const double q = sq[k] + (sq[n] - sq[n - (g - k)]);
    const double var =
        q / static_cast<double>(g) - (s / static_cast<double>(g)) * (s / static_cast<double>(g));
    if (var > best + 1e-12) {
      best = var;
      best_k = k;
    }
  }
  std::vector<size_t> chosen(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(best_k));
  chosen.insert(chosen.end(), order.end() - static_cast<std::ptrdiff_t>(g - best_k), order.end());
  return chosen;
}

std::optional<double> kendall_tau_b(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.size() < 2) return std::nullopt;
  double concordant = 0, discordant = 0, ties_a = 0, ties_b = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = i + 1; j < a.size(); ++j) {
      const double da = a[i] - a[j], db = b[i] - b[j];
      if (da == 0 && db == 0) continue;
      if (da == 0) {
        ++ties_a;
      } else if (db == 0) {
        ++ties_b;
      } else if ((da > 0) == (db > 0)) {
        ++concordant;
      } else {
        ++discordant;
      }
    }
  }
  const double denominator =
      std::sqrt((concordant + discordant + ties_a) * (concordant + discordant + ties_b));
  if (denominator == 0) return std::nullopt;
  return (concordant - discordant) / denominator;
}

}  // namespace spotlight::rl
