#pragma once
// spotlight-chaos as a process: command-line parsing and the run (library + thin main).

#include <optional>
#include <string>
#include <vector>

#include "tools/chaos/chaos_schedule.hpp"
#include "tools/chaos/driver.hpp"

namespace spotlight::chaos {

struct ChaosCommand {
  std::string trace;
  ScheduleOptions schedule;
  DriverOptions driver;
  std::string summary;  // JSON summary file; empty: stdout only
  bool help = false;    // -h / --help: print chaos_usage(), nothing else is set
};

// Parses the words after the program name (see chaos_usage()). Throws config::ConfigError
// naming the bad option, std::invalid_argument for schedule or driver options out of range.
ChaosCommand parse_chaos_command(const std::vector<std::string>& args);
std::string chaos_usage();

// Runs until the trace ends, --ticks pass, a child exits 0 by itself or SIGTERM/SIGINT; prints
// the summary JSON on stdout (and to --summary). Returns the exit code.
int run_chaos(const ChaosCommand& command);

}  // namespace spotlight::chaos
