#include "common/config/command_line.hpp"

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "common/config/arguments.hpp"

namespace spotlight::config {

CommandLine parse_command_line(int argc, const char* const* argv) {
  ArgumentParser parser("");
  parser.option("config", "FILE", "YAML configuration file")
      .repeated("set", "KEY=VALUE", "override");
  Arguments args = [&] {
    try {
      return parser.parse(argc, argv);
    } catch (const ConfigError& e) {
      throw ConfigError("", std::string("config: ") + e.what());
    }
  }();
  CommandLine cmd;
  if (argc > 0 && argv[0] != nullptr) cmd.program = argv[0];
  cmd.help = args.help();
  cmd.args = args.positional();
  cmd.args.insert(cmd.args.end(), args.rest().begin(), args.rest().end());
  if (const auto file = args.value("config")) {
    if (file->empty()) throw ConfigError("", "config: --config needs a file name");
    cmd.sources.file = *file;
  }
  for (std::string& value : args.values("set")) {
    if (value.find('=') == std::string::npos) {
      throw ConfigError("", "config: --set '" + value + "' must be KEY=VALUE");
    }
    cmd.sources.overrides.push_back(std::move(value));
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
