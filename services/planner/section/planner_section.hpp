#pragma once
// The planner's section of the job's schema: planner.* (planner.policy is the run's, in
// common/run/exploration_config.hpp: other services read it). services/job composes it;
// services/planner/planner_config reads it.
#include "common/config/schema.hpp"

namespace spotlight::planner {

const config::Schema& planner_schema();

}  // namespace spotlight::planner
