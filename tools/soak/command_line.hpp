#pragma once
// spotlight-soak's command line: the soak's options (soak.hpp) as flags, --config / --set for the
// job. soak_usage() lists every flag.

#include <filesystem>
#include <string>
#include <vector>

#include "tools/soak/soak.hpp"

namespace spotlight::soak {

struct SoakCommand {
  SoakOptions options;
  std::filesystem::path report;  // the report JSON also written here; empty: stdout only
  bool quiet = false;
  bool help = false;
};

// Throws config::ConfigError naming a bad or unknown flag, std::invalid_argument for options out
// of range. `program` (argv[0]) sets the defaults of --bin-dir (<its folder>/../../services) and
// --chaos (<its folder>/../chaos/spotlight-chaos).
SoakCommand parse_soak_command(const std::vector<std::string>& args,
                               const std::filesystem::path& program);
std::string soak_usage();

}  // namespace spotlight::soak
