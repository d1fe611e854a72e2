#pragma once
// The services' own sections of the run's schema. One YAML file configures the whole job and
// every service validates all of it (an unknown key anywhere is an error), so run_schema() holds
// these sections too; each service reads its own into its options, once:
//
//   pretrain_schema()   pretrain.*                            services/trainer/trainer_config
//   training_schema()   trainer.*, validation.*, audit.*      services/trainer/trainer_config
//   bench_schema()      bench.*                               services/trainer/trainer_config
//   planner_schema()    planner.* (planner.policy: exploration_config.hpp)
//                                                             services/planner/planner_config
//   explorer_schema()   explorer.*, explorer.sp.*             services/explorer/explorer_options
//   cost_schema()       cost.*                                common/cost/cost_config

#include "common/config/schema.hpp"

namespace spotlight::run {

const config::Schema& pretrain_schema();
const config::Schema& training_schema();
const config::Schema& bench_schema();
const config::Schema& planner_schema();
const config::Schema& explorer_schema();
const config::Schema& cost_schema();

}  // namespace spotlight::run
