#pragma once
// The trained SDE steps of a rollout (no LibTorch: the planner asks explorers for them).

#include <algorithm>

namespace spotlight::rollout {

// Steps [begin, end) of a rollout with `steps` SDE steps.
struct StepWindow {
  int begin = 0;
  int end = 0;
  int size() const { return end - begin; }
  bool operator==(const StepWindow&) const = default;
};

// From trainer.train_step_begin / train_step_end: end <= 0 counts from the last step (-1: all
// but the last, as Flow-GRPO). Always 0 <= begin <= end <= steps.
inline StepWindow trained_steps(int steps, int begin, int end) {
  StepWindow w;
  w.begin = std::clamp(begin, 0, steps);
  w.end = std::clamp(end <= 0 ? steps + end : end, w.begin, steps);
  return w;
}

}  // namespace spotlight::rollout
