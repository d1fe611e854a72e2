#pragma once
// The task's configuration sections, shared by the run (trainer, planner, explorers) and the
// reward service, and the one reader that turns them into TaskOptions.
//
//   reward.kind                                   scoring_schema()   both
//   task.held_out_fraction, task.category_weights prompts_schema()   the run (prompt generator)
//   task.image_size                               image_size_schema() the reward service

#include "common/config/choice.hpp"
#include "common/config/config.hpp"
#include "common/config/schema.hpp"
#include "common/task/options.hpp"

namespace spotlight::task {

inline constexpr config::Choice<RewardKind> kRewardKinds[] = {
    {"partial", RewardKind::kPartial},
    {"strict", RewardKind::kStrict},
};

// Five weights (single_object, two_object, counting, position, text), none negative, one
// positive: the rule of task.category_weights and of other category mixes (pretrain.*).
bool valid_category_weights(const config::Value& value);
inline constexpr const char* kCategoryWeightsRule =
    "must have 5 non-negative weights, one positive";

const config::Schema& scoring_schema();
const config::Schema& prompts_schema();
const config::Schema& image_size_schema();

// reward.kind, and each key of prompts_schema() and image_size_schema() that the config's schema
// declares (the others keep TaskOptions' defaults).
TaskOptions task_options(const config::Config& config);

}  // namespace spotlight::task
