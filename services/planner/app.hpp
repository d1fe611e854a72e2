#pragma once
// The spotlight-planner process: metrics endpoint (metrics.bind), the planner on the run's
// Redis, its loop (on its own thread) until the trainer finishes or SIGTERM / SIGINT arrives
// (common/signals: the pass in progress finishes, then it exits 0).

#include "common/config/config.hpp"

namespace spotlight::planner {

// Returns the exit status: 0 when the trainer finished or a stop signal arrived, 1 when the
// planner could not be built (e.g. the metrics address cannot be served).
int run_planner(const config::Config& config);

}  // namespace spotlight::planner
