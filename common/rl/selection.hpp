#pragma once
// Max-variance seed selection (docs/algorithm.md): from N explored candidates of a prompt keep
// the G whose rewards have maximum variance. The optimum is always the k lowest plus the G-k
// highest rewards for some k, so sorting and scanning k is O(N log N).

#include <cstddef>
#include <vector>

namespace spotlight::rl {

// Indices into `rewards` of the selected G candidates (G <= N), in ascending reward order.
// Ties are broken by index so the result is deterministic.
std::vector<size_t> select_max_variance(const std::vector<double>& rewards, size_t g);

// Population variance of the given values.
double variance(const std::vector<double>& values);

}  // namespace spotlight::rl
