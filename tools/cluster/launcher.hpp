#pragma once
// The spotlight-cluster program as a function: base checkpoint, cluster, manifest. main() only
// installs the stop signals and calls it.

#include <ostream>
#include <stop_token>

#include "tools/cluster/command_line.hpp"

namespace spotlight::cluster {

// Runs the job described by `options`: ensure_base() when asked, Cluster start, the --driver,
// wait_trainer, drain and the --after command, stop, the manifest. Returns the trainer's exit
// status as a shell code (0: the job finished), the driver's when it ended the job
// (--driver-stops-job), and the --after command's when that was 0. A stop request terminates
// the trainer, then the rest, and still writes the manifest; one during the base model's
// pretraining ends it and starts nothing (128 + SIGTERM, no manifest).
int run_launcher(LauncherOptions options, std::stop_token stop);

}  // namespace spotlight::cluster
