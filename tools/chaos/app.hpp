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
};

// Parses argv (see usage()). Throws std::invalid_argument naming the bad flag.
ChaosCommand parse_chaos_command(const std::vector<std::string>& args);
std::string chaos_usage();

// Runs until the trace ends, --ticks pass, a child exits 0 by itself or SIGTERM/SIGINT; prints
// the summary JSON on stdout (and to --summary). Returns the exit code.
int run_chaos(const ChaosCommand& command);

}  // namespace spotlight::chaos
