#include "common/exploration/exploration_policy.hpp"

#include <stdexcept>
#include <string>

namespace spotlight::exploration {

FixedExplorationPolicy::FixedExplorationPolicy(ExplorationDecision decision) : decision_(decision) {
  if (decision.candidates < 1) {
    throw std::invalid_argument("FixedExplorationPolicy: candidates must be >= 1, got " +
                                std::to_string(decision.candidates));
  }
  if (decision.steps < 2) {
    throw std::invalid_argument("FixedExplorationPolicy: steps must be >= 2, got " +
                                std::to_string(decision.steps));
  }
}

ExplorationDecision FixedExplorationPolicy::decide(const IterationContext&) {
  return decision_;
}

}  // namespace spotlight::exploration
