#pragma once
// Kendall rank correlation for the staleness audit: how well the rewards of the same seeds under
// stale weights rank like those under fresh weights. tau-b, which accounts for ties.

#include <optional>
#include <vector>

namespace spotlight::rl {

// nullopt when undefined (fewer than 2 pairs, or either side constant).
std::optional<double> kendall_tau_b(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace spotlight::rl
