#pragma once
// The spotlight-planner process: metrics endpoint (metrics.bind), the planner on the run's
// Redis, its loop until the trainer finishes or `stop` is requested.

#include "common/config/config.hpp"
#include "services/planner/stop_flag.hpp"

namespace spotlight::planner {

// Returns the exit status: 0 when the trainer finished or a stop was requested, 1 when the
// planner could not be built (e.g. the metrics address cannot be served).
int run_planner(const config::Config& config, const StopFlag& stop);

}  // namespace spotlight::planner
