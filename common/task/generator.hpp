#pragma once
// Training prompts and held-out validation prompts.
//
// Each category has a finite prompt space (single_object 12, two_object 132, counting 12 x
// (max_count-1), position 12 x 11 x 4 x 2, text all digit strings without a leading zero). The
// space is split deterministically; training and validation must use the same TaskOptions (the
// weights aside). Prompts are keyed by a canonical form (a two-object prompt ignores the order of
// its objects; "a A left of a B" is "a B right of a A", likewise above/below), keys are ordered
// by a fixed 64-bit hash, and the first ceil(held_out_fraction * #keys) keys of each category are
// held out. The training generator never produces a held-out prompt; validation prompts are all
// held out, so the two are disjoint by text and by meaning.

#include <cstdint>
#include <memory>
#include <vector>

#include "common/task/options.hpp"
#include "common/task/prompt.hpp"
#include "common/task/prompt_source.hpp"

namespace spotlight::task {

class PromptGenerator final : public PromptSource {
 public:
  // Enumerates and splits the prompt spaces (a few milliseconds). Throws TaskError if `options`
  // is invalid. Copies share the tables; thread-safe after construction.
  explicit PromptGenerator(const TaskOptions& options = {});

  // A training prompt, a pure function of (options, seed): category drawn by weight, then a prompt
  // uniformly among the category's training prompts.
  Prompt sample(uint64_t seed) const override;
  // validation_prompts(options(), n).
  std::vector<Prompt> validation(int n) const override;

  // True iff `prompt` is held out for validation (never returned by sample()).
  bool is_held_out(const Prompt& prompt) const;

  // Training prompts of one category, in a fixed order (also for a category of weight 0, which
  // sample() never draws).
  const std::vector<Prompt>& training_prompts(Category category) const;
  // Held-out prompts of one category, in a fixed order (ordered by text hash, so a prefix mixes
  // colours, shapes and relations).
  const std::vector<Prompt>& held_out_prompts(Category category) const;

  const TaskOptions& options() const;

 private:
  struct Tables;
  std::shared_ptr<const Tables> tables_;
};

// n fixed held-out prompts, balanced over the categories with positive weight: categories take
// turns in kCategories order, each cycling through its held_out_prompts(). A prefix of the result
// is the result for a smaller n. Throws TaskError if options are invalid or n < 0.
std::vector<Prompt> validation_prompts(const TaskOptions& options, int n);

}  // namespace spotlight::task
