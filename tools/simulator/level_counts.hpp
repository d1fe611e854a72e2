#pragma once
// The groups of one update as counts per reward level. With K reward levels a sample's reward is
// l / K for l in 0..K, and what an update does (learning_model.hpp: advantages, signal, noise)
// depends on a group only through how many of its samples sit at each level, not on their order.
// Keeping those counts instead of the rewards makes an update O(groups x (K + 1)) instead of
// O(groups x G), and one buffer serves every iteration of a run (no allocation per group).
//
//   LevelCounts batch(levels);
//   int* c = batch.add_group();  // K + 1 zeroed counts
//   c[l] += 1;                   // a sample of reward l / K
//
// Each group also carries what the contrast law (learning_model.hpp) needs to know about it: the
// category of its prompt and whether it was selected from explored candidates.

#include <cstddef>
#include <vector>

namespace spotlight::simulator {

struct GroupTag {
  int category = 0;
  bool selected = false;
};

class LevelCounts {
 public:
  explicit LevelCounts(int levels = 1) : levels_(levels) {}

  int levels() const { return levels_; }  // K
  int groups() const { return static_cast<int>(counts_.size()) / (levels_ + 1); }
  // Counts of group i, K + 1 of them.
  const int* group(int i) const { return counts_.data() + static_cast<std::size_t>(i) * width(); }
  int* group(int i) { return counts_.data() + static_cast<std::size_t>(i) * width(); }
  // Samples in group i.
  int size(int i) const;
  // Population variance of group i's rewards (rl::variance of the same rewards).
  double variance(int i) const;

  const GroupTag& tag(int i) const { return tags_[static_cast<std::size_t>(i)]; }

  // Appends a group with every count 0 and returns its counts (valid until the next add_group).
  int* add_group(GroupTag tag = {});
  // Appends the counts of these rewards (each must be l / K for an integer l in 0..K).
  void add_rewards(const std::vector<double>& rewards);
  // Removes every group; keeps the buffer.
  void clear() {
    counts_.clear();
    tags_.clear();
  }

 private:
  std::size_t width() const { return static_cast<std::size_t>(levels_) + 1; }
  int levels_;
  std::vector<int> counts_;
  std::vector<GroupTag> tags_;
};

}  // namespace spotlight::simulator
