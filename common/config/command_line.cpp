#include "common/config/command_line.hpp"

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace spotlight::config {

CommandLine parse_command_line(int argc, const char* const* argv) {
  CommandLine cmd;
  if (argc > 0 && argv[0] != nullptr) cmd.program = argv[0];
  bool options_done = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view word = argv[i] != nullptr ? argv[i] : "";
    if (options_done || word.empty() || word.front() != '-' || word == "-") {
      cmd.args.emplace_back(word);
      continue;
    }
    if (word == "--") {
      options_done = true;
      continue;
    }
    if (word == "-h" || word == "--help") {
      cmd.help = true;
      continue;
    }
    // --name value | --name=value
    const std::size_t eq = word.find('=');
    const std::string_view name = word.substr(0, eq);
    if (name != "--config" && name != "--set") {
      throw ConfigError("", "config: unknown option '" + std::string(word) + "'");
    }
    std::string value;
    if (eq != std::string_view::npos) {
      value = std::string(word.substr(eq + 1));
    } else if (i + 1 < argc && argv[i + 1] != nullptr) {
      value = argv[++i];
    } else {
      throw ConfigError("", "config: option '" + std::string(name) + "' needs a value");
    }
    if (name == "--config") {
      if (cmd.sources.file) throw ConfigError("", "config: --config given twice");
      if (value.empty()) throw ConfigError("", "config: --config needs a file name");
      cmd.sources.file = value;
    } else {
      if (value.find('=') == std::string::npos) {
        throw ConfigError("", "config: --set '" + value + "' must be KEY=VALUE");
      }
      cmd.sources.overrides.push_back(std::move(value));
    }
  }
  return cmd;
}

Config load_or_exit(const Schema& schema, int argc, const char* const* argv,
                    const std::string& usage_line, CommandLine* command_line) {
  try {
    CommandLine cmd = parse_command_line(argc, argv);
    if (cmd.help) {
      std::fputs(usage_line.c_str(), stdout);
      if (!usage_line.empty() && usage_line.back() != '\n') std::fputc('\n', stdout);
      std::fputs(kCommandLineUsage, stdout);
      std::fputc('\n', stdout);
      std::fputs(schema.help().c_str(), stdout);
      std::fflush(stdout);
      std::exit(0);
    }
    Config config = Config::load(schema, cmd.sources);
    if (command_line != nullptr) *command_line = std::move(cmd);
    return config;
  } catch (const ConfigError& e) {
    // One line: what is wrong, naming the key or file.
    std::fprintf(stderr, "%s (--help lists the options and configuration keys)\n", e.what());
    std::exit(2);
  }
}

}  // namespace spotlight::config
