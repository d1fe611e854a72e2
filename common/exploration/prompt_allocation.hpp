#pragma once
// Per-prompt exploration (exploration.allocation=adaptive; docs/algorithm.md): candidates go
// where contrast is scarce.
//
// Each prompt keeps a Beta(a, b) posterior of its success rate across iterations (a reward r in
// [0, 1] adds r to a and 1 - r to b; wire::PromptPosterior in Redis). With p its mean, n explored
// candidates show contrast (not all alike) with probability 1 - p^n - (1 - p)^n, so a prompt
// whose successes are rare (or near certain) needs more candidates than one near p = 1/2:
//
//   need(p) = the least n in [G, cap] with 1 - p^n - (1 - p)^n >= probability (else cap)
//   order:  every prompt's candidates 0..G-1 first (round-robin: each can be selected from),
//           then candidate j >= G of prompt i at G + (j - G + 1) / (need_i - G + 1):
//           the prompts that need more get their extra candidates sooner
//   a prompt is satisfied once the best G of its explored rewards have variance >= target:
//           its remaining waiting tasks are purged and the pool moves on to the others
//   a prompt whose explored rewards are all alike when its iteration is passed is uniform:
//           counted and logged by the planner, its posterior updated like any other
//
// Pure logic; deterministic. Thread-safe (no state).

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace spotlight::exploration {

struct BetaPosterior {
  double a = 1.0;
  double b = 1.0;
  // Adds one reward (clamped into [0, 1]); non-finite rewards are ignored.
  void add(double reward);
  double mean() const { return a / (a + b); }
};

struct AllocationOptions {
  int group_size = 8;             // G
  double contrast_target = 0.02;  // best G-of-n reward variance that satisfies a prompt, > 0
  double probability = 0.9;       // of seeing contrast when sizing a prompt's need, (0, 1)

  // Throws std::invalid_argument naming the first bad field.
  void validate() const;
};

// need(p) above, for cap >= G (cap < G: cap).
int candidates_needed(const BetaPosterior& posterior, const AllocationOptions& options, int cap);

// The order in which to enqueue `cap` candidates of each prompt: (prompt, candidate) pairs, every
// pair once. need[i] is prompt i's need (clamped into [G, cap]).
std::vector<std::pair<int, int>> exploration_order(std::span<const int> need, int group_size,
                                                   int cap);

// Whether the best group_size of `rewards` reach the contrast target (false with fewer rewards).
bool contrast_reached(const std::vector<double>& rewards, const AllocationOptions& options);
// At least two rewards, all equal (within 1e-12): nothing to learn from this prompt.
bool all_alike(const std::vector<double>& rewards);

}  // namespace spotlight::exploration
