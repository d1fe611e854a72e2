#include "common/task/task_config.hpp"

#include <algorithm>
#include <vector>

namespace spotlight::task {

using config::Entry;

bool valid_category_weights(const config::Value& value) {
  const auto& w = std::get<std::vector<double>>(value);
  return w.size() == 5 && std::all_of(w.begin(), w.end(), [](double x) { return x >= 0; }) &&
         std::any_of(w.begin(), w.end(), [](double x) { return x > 0; });
}

const config::Schema& scoring_schema() {
  static const config::Schema schema{
      Entry::string("reward.kind", "partial",
                    "What the embedded task's scorer pays: partial (the mean credit of the "
                    "prompt's clauses) or strict (1 when every clause passes, else 0, as GenEval). "
                    "Validation reports both; mean_reward is this one.")
          .one_of(config::names(kRewardKinds)),
  };
  return schema;
}

const config::Schema& prompts_schema() {
  static const config::Schema schema{
      Entry::real("task.held_out_fraction", 0.125,
                  "Share of each category's prompts held out for validation.")
          .range(0.01, 0.5),
      Entry::double_list("task.category_weights", {1, 1, 1, 1, 1},
                         "Weights of single_object, two_object, counting, position, text prompts "
                         "in training and validation.")
          .check(kCategoryWeightsRule, valid_category_weights),
  };
  return schema;
}

const config::Schema& image_size_schema() {
  static const config::Schema schema{
      Entry::integer("task.image_size", TaskOptions{}.image_size,
                     "Side of the square RGB images scored; requests of another size are "
                     "rejected.")
          .range(32, 256),
  };
  return schema;
}

TaskOptions task_options(const config::Config& c) {
  TaskOptions o;
  o.reward_kind = config::get_choice(c, "reward.kind", kRewardKinds);
  if (c.schema().find("task.held_out_fraction") != nullptr) {
    o.held_out_fraction = c.get_double("task.held_out_fraction");
    const auto& w = c.get_double_list("task.category_weights");
    o.weights = {w[0], w[1], w[2], w[3], w[4]};
  }
  if (c.schema().find("task.image_size") != nullptr) {
    o.image_size = c.get<int>("task.image_size");
  }
  return o;
}

}  // namespace spotlight::task
