#pragma once
// The whole job's schema. One YAML file configures the job and every service validates all of it
// (an unknown key anywhere is an error), so each service main, the local cluster, the soak and
// the tests load this one: the run's part (common/run/run_config.hpp) and each service's own
// section, in this order:
//
//   run::run_schema()            run.*, model.*, task.*, sampler.*, exploration.*, redis.*, bus.*,
//                                reward.*, metrics.*                       common/run
//   trainer::pretrain_schema()   pretrain.*                                services/trainer/section
//   trainer::training_schema()   trainer.*, validation.*, audit.*          services/trainer/section
//   trainer::bench_schema()      bench.*                                   services/trainer/section
//   planner::planner_schema()    planner.*                                 services/planner/section
//   explorer::explorer_schema()  explorer.*, explorer.sp.* services/explorer/section
//   run::cost_schema()           cost.*                                    common/run
//
// No LibTorch: the planner and the tools link this.

#include "common/config/schema.hpp"

namespace spotlight::job {

const config::Schema& run_schema();

}  // namespace spotlight::job
