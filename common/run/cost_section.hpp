#pragma once
// cost.*: the run's cost accounting (common/cost/cost_config reads it), which the trainer and the
// explorers share. The services' own sections live with each service (services/*/section) and
// services/job/job_schema.hpp composes them with the run's schema.

#include "common/config/schema.hpp"

namespace spotlight::run {

const config::Schema& cost_schema();

}  // namespace spotlight::run
