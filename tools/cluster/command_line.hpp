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

extern const char* const kUsage;

struct LauncherOptions {
  ClusterOptions cluster;
  std::optional<std::filesystem::path> base;        // --base: model.base as given
  std::optional<std::filesystem::path> base_cache;  // --base-cache: ensure_base() in this folder
  Placement pretrain;                               // --pretrain-cpus
  bool base_only = false;  // --base-only: ensure the base, print its path, run nothing
  bool quiet = false;
  bool help = false;
};

// Throws std::invalid_argument naming the flag for an unknown flag, a missing or bad value.
// `program` (argv[0]) sets the default bin_dir: <its folder>/../../services.
LauncherOptions parse_launcher_command_line(const std::vector<std::string>& args,
                                            const std::filesystem::path& program);

}  // namespace spotlight::cluster
