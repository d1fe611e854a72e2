#pragma once
// Where a run's prompts come from: the embedded task's generator (generator.hpp) or a user's
// prompt file (prompt_file.hpp). Trainer and planner draw iteration k's prompts from the same
// source with the same seeds (common/run/schedule.hpp), so they agree without exchanging them.

#include <cstdint>
#include <vector>

#include "common/task/prompt.hpp"

namespace spotlight::task {

class PromptSource {
 public:
  virtual ~PromptSource() = default;
  // A training prompt, a pure function of the source and `seed`.
  virtual Prompt sample(uint64_t seed) const = 0;
  // The first n of a fixed list of held-out validation prompts (all of them when there are fewer
  // than n). Throws TaskError for n < 0.
  virtual std::vector<Prompt> validation(int n) const = 0;
};

}  // namespace spotlight::task
