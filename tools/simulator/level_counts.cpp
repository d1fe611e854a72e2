#include "tools/simulator/level_counts.hpp"

#include <cmath>
#include <stdexcept>

namespace spotlight::simulator {

int LevelCounts::size(int i) const {
  const int* c = group(i);
  int n = 0;
  for (int l = 0; l <= levels_; ++l)
    n += c[l];
  return n;
}

double LevelCounts::variance(int i) const {
  const int* c = group(i);
  const int n = size(i);
  if (n == 0) return 0;
  double mean = 0;
  for (int l = 0; l <= levels_; ++l)
    mean += c[l] * (static_cast<double>(l) / levels_);
  mean /= n;
  double squares = 0;
  for (int l = 0; l <= levels_; ++l) {
    const double d = static_cast<double>(l) / levels_ - mean;
    squares += c[l] * d * d;
  }
  return squares / n;
}

int* LevelCounts::add_group(GroupTag tag) {
  counts_.resize(counts_.size() + width(), 0);
  tags_.push_back(tag);
  return group(groups() - 1);
}

void LevelCounts::add_rewards(const std::vector<double>& rewards) {
  int* c = add_group();
  for (double r : rewards) {
    const double scaled = r * levels_;
    const long l = std::lround(scaled);
    if (l < 0 || l > levels_ || std::abs(scaled - static_cast<double>(l)) > 1e-9) {
      counts_.resize(counts_.size() - width());
      tags_.pop_back();
      throw std::invalid_argument("level counts: reward " + std::to_string(r) +
                                  " is not l / K for K = " + std::to_string(levels_));
    }
    ++c[l];
  }
}

}  // namespace spotlight::simulator
