#pragma once
// spotlight-sim's subcommands (main.cpp only dispatches):
//
//   fit    --measured MEASURED.json --out FITTED.json
//          fits the learning model to the measured file scripts/sim-calibrate writes, prints
//          the fit and how well it reproduces the measured iterations-to-target
//   check  --measured MEASURED.json --fitted FITTED.json [--replays 400]
//          replays every measured configuration with the fitted parameters
//   study  --fitted FITTED.json --out STUDY.jsonl [--hardware H200] [--reserved 32]
//          [--offsets 30] [--ratios 0.5,1,2,4] [--gains 1,1.5,2,3,4,6,8]
//          [--calibrations embedded,published] [--modes ...] [TRACE.json ...]
//          the cluster study (study.hpp); traces default to deploy/traces/availability_*.json
//
// Every option is `--name value`; an unknown one is an error (exit 2).

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace spotlight::simulator {

// A bad command line: unknown subcommand or option, a missing or malformed value.
class UsageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct Arguments {
  std::string command;
  std::map<std::string, std::string> options;  // without the leading --
  std::vector<std::string> positional;
};

// Throws UsageError.
Arguments parse_arguments(int argc, const char* const* argv);

// Runs the command; returns the exit status. Throws UsageError for a bad command line and
// std::exception for anything else.
int run_command(const Arguments& arguments);

extern const char* const kUsage;

}  // namespace spotlight::simulator
