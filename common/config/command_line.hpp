// The command line every service shares:
//   <program> [SUBCOMMAND ARGS...] [--config FILE] [--set key=value]... [--help]
// Options may appear anywhere; `--opt=value` works as well as `--opt value`; after `--` all
// words are positional. Anything else starting with '-' is rejected.
#pragma once

#include <string>
#include <vector>

#include "common/config/config.hpp"

namespace spotlight::config {

inline constexpr const char* kCommandLineUsage =
    "Options:\n"
    "  --config FILE      YAML configuration file (nested maps: `trainer: {lr: 1e-4}`)\n"
    "  --set KEY=VALUE    override one key, e.g. --set trainer.lr=1e-4 (repeatable)\n"
    "  -h, --help         print this help and the configuration keys\n";

struct CommandLine {
  std::string program;            // argv[0]
  std::vector<std::string> args;  // positional words in order; args[0] is the subcommand, if any
  ConfigSources sources;          // file from --config, overrides from --set (in order)
  bool help = false;              // -h or --help was given
};

// Throws ConfigError for an unknown option, an option without its value, `--config` given
// twice, or a --set without '='.
CommandLine parse_command_line(int argc, const char* const* argv);

// For a ten-line main(): parses the command line and loads the config. On --help prints
// `usage_line`, kCommandLineUsage and schema.help() to stdout and exits 0; on a ConfigError
// prints its message to stderr and exits 2. `command_line`, when given, receives the parse.
Config load_or_exit(const Schema& schema, int argc, const char* const* argv,
                    const std::string& usage_line, CommandLine* command_line = nullptr);

}  // namespace spotlight::config
