#pragma once
// spotlight-sim's subcommands (main.cpp only calls run_command_line):
//
//   fit    --measured MEASURED.json --out FITTED.json
//          fits the learning model to the measured file scripts/sim-calibrate writes, prints
//          the fit and how well it reproduces the measured iterations-to-target
//   check  --measured MEASURED.json --fitted FITTED.json [--replays 400]
//          replays every measured configuration with the fitted parameters; exit 1 when a
//          checked configuration falls outside its measured interval
//   study  --fitted FITTED.json --out STUDY.jsonl [--hardware H200] [--reserved 32]
//          [--offsets 30] [--ratios 0.5,1,2,4] [--gains 1,1.5,2,3,4,6,8]
//          [--calibrations embedded,published] [--modes ...] [TRACE.json ...]
//          the cluster study (study.hpp); traces default to deploy/traces/availability_*.json
//   page   PAGE.json OUT.html
//          a report page described as JSON (common/report/page_json.hpp; scripts/sim_report.py
//          writes one for the study) as one self-contained HTML file
//
// Options go through the shared command-line parser (common/config/arguments.hpp): an unknown
// option, a missing value or a malformed number is a config::ConfigError (exit 2).

namespace spotlight::simulator {

// argv[0] is the program, argv[1] the command. Returns the exit status (0 after --help).
// Throws config::ConfigError for a bad command line and std::exception for anything else.
int run_command_line(int argc, const char* const* argv);

}  // namespace spotlight::simulator
