#pragma once
// Options of the embedded task, shared by the generator, the renderer and the scorer. The same
// options must be used to generate, render and score (the scorer derives its object and glyph
// sizes from image_size).

#include <string_view>

namespace spotlight::task {

// What score() pays as the reward. Partial: the mean credit of the prompt's clauses (1 only when
// every clause passes). Strict: 1 when every clause passes, else 0, GenEval's binary verdict (the
// reward Flow-GRPO trains GenEval on).
enum class RewardKind { kPartial, kStrict };

// "partial" or "strict"; RewardKind from those names, or throws TaskError.
std::string_view name(RewardKind kind);
RewardKind parse_reward_kind(std::string_view text);

// Relative frequency of each category in training prompts (need not sum to 1; a weight of 0
// disables the category, also in validation_prompts()).
struct CategoryWeights {
  double single_object = 1.0;
  double two_object = 1.0;
  double counting = 1.0;
  double position = 1.0;
  double text = 1.0;
};

struct TaskOptions {
  int image_size = 32;               // images are image_size x image_size RGB; in [32, 256]
  CategoryWeights weights;           // at least one positive, none negative
  int max_count = 4;                 // counting prompts ask for 2..max_count objects; in [2, 4]
  int min_digits = 2;                // text prompts have min_digits..max_digits digits;
  int max_digits = 4;                //   1 <= min_digits <= max_digits <= 4
  double held_out_fraction = 0.125;  // share of each category's prompts held out for
                                     // validation; in (0, 0.5]
  RewardKind reward_kind = RewardKind::kPartial;  // what score() pays

  // Throws TaskError naming the first invalid field.
  void validate() const;
};

}  // namespace spotlight::task
