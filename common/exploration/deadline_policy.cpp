#include "common/exploration/deadline_policy.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "common/exploration/finish_time.hpp"

namespace spotlight::exploration {
namespace {

void require(bool ok, const char* field, const std::string& why) {
  if (!ok) throw std::invalid_argument(std::string("DeadlineOptions.") + field + ": " + why);
}

std::int64_t work_of(const ExplorationDecision& d) {
  return std::int64_t{d.candidates} * d.steps;
}

}  // namespace

void DeadlineOptions::validate() const {
  require(!candidates.empty(), "candidates", "must not be empty");
  require(!steps.empty(), "steps", "must not be empty");
  for (int n : candidates)
    require(n >= 1, "candidates", "every N must be >= 1");
  for (int s : steps)
    require(s >= 2, "steps", "every S must be >= 2");
  require(group_size >= 1, "group_size", "must be >= 1");
  require(probability > 0 && probability < 1, "probability", "must be in (0, 1)");
}

DeadlineExplorationPolicy::DeadlineExplorationPolicy(DeadlineOptions options)
    : options_(std::move(options)) {
  options_.validate();
  for (int n : options_.candidates) {
    if (n < options_.group_size) continue;
    for (int s : options_.steps) {
      const ExplorationDecision arm{n, s};
      if (std::find(arms_.begin(), arms_.end(), arm) == arms_.end()) arms_.push_back(arm);
    }
  }
  require(!arms_.empty(), "candidates", "no N >= group_size");
  std::stable_sort(arms_.begin(), arms_.end(),
                   [](const ExplorationDecision& a, const ExplorationDecision& b) {
                     if (work_of(a) != work_of(b)) return work_of(a) > work_of(b);
                     return a.candidates > b.candidates;
                   });
}

ExplorationDecision DeadlineExplorationPolicy::decide(const IterationContext& context) {
  DeadlineChoice choice;
  choice.iteration = context.iteration;
  choice.live_explorers = context.live_explorers;
  const std::chrono::milliseconds budget = context.training_time.value_or(context.time_budget);
  choice.budget_seconds = static_cast<double>(budget.count()) / 1000.0;
  const FinishTimeModel* model = context.finish_model;
  if (context.live_explorers && *context.live_explorers <= 0) {
    choice.chosen = {0, 0};
    choice.reason = "no explorers";
  } else if (model == nullptr || !model->has_timing()) {
    choice.chosen = arms_.back();
    choice.reason = "probe: no timing yet";
  } else {
    const int explorers = context.live_explorers.value_or(1);
    choice.chosen = {0, 0};
    choice.reason = "no arm finishes in time";
    for (const ExplorationDecision& arm : arms_) {
      const ExplorationWork work{std::int64_t{context.prompts} * arm.candidates, arm.steps,
                                 context.queue_depth};
      const auto p = model->predict(work, explorers, choice.budget_seconds);
      if (p && p->probability >= options_.probability) {
        choice.chosen = arm;
        choice.reason = "largest in time";
        choice.predicted_seconds = p->mean_seconds;
        choice.probability = p->probability;
        break;
      }
    }
  }
  last_ = choice;
  return choice.chosen;
}

}  // namespace spotlight::exploration
