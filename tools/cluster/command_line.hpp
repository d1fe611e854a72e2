#pragma once
// spotlight-cluster's command line: placement flags for the launcher, --config / --set for the
// run (passed to trainer, planner and explorers as given). kUsage lists every flag.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tools/cluster/base_model.hpp"
#include "tools/cluster/cluster.hpp"

namespace spotlight::cluster {

extern const char* const kUsage;  // NOLINT(readability-identifier-naming): a constant, kName

struct LauncherOptions {
  ClusterOptions cluster;
  std::optional<std::filesystem::path> base;        // --base: model.base as given
  std::optional<std::filesystem::path> base_cache;  // --base-cache: ensure_base() in this folder
  Placement pretrain;                               // --pretrain-cpus
  bool base_only = false;  // --base-only: ensure the base, print its path, run nothing
  // Shell commands (/bin/sh -c) of a benchmark harness, with {service-args} and {redis-port}
  // expanded (expand_command()): --driver runs beside the job (started after the trainer,
  // stopped first; with --driver-stops-job its exit ends the job), --after once the trainer and
  // the drain are over, while Redis still runs.
  std::string driver;
  bool driver_stops_job = false;
  std::string after;
  bool quiet = false;
  bool help = false;
};

// `command` with every {service-args} replaced by `service_args`, each word quoted for /bin/sh,
// and every {redis-port} by `redis_port`.
std::string expand_command(std::string command, const std::vector<std::string>& service_args,
                           int redis_port);

// Throws std::invalid_argument naming the flag for an unknown flag, a missing or bad value.
// `program` (argv[0]) sets the default bin_dir: <its folder>/../../services.
LauncherOptions parse_launcher_command_line(const std::vector<std::string>& args,
                                            const std::filesystem::path& program);

}  // namespace spotlight::cluster
