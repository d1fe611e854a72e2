// spotlight-trainer of a core-only build (SPOTLIGHT_CORE_ONLY): the compute core's subcommands
// (commands.hpp) without the services' hooks: train supports exploration.mode none and sync.
// A configuration error exits 2, any other failure 1, each with its message on stderr.
#include <exception>
#include <iostream>

#include "common/config/command_line.hpp"
#include "common/config/error.hpp"
#include "common/log/log.hpp"
#include "services/trainer/commands.hpp"
#include "services/trainer/trainer_config.hpp"

int main(int argc, char** argv) {
  spotlight::log::set_component("trainer");
  try {
    spotlight::config::CommandLine command_line;
    const auto config = spotlight::config::load_or_exit(
        spotlight::trainer::trainer_schema(), argc, argv,
        "usage: spotlight-trainer pretrain|train|eval|bench [options] (core-only build)",
        &command_line);
    spotlight::trainer::NoTrainHooks hooks;
    return spotlight::trainer::run_subcommand(command_line.args.empty() ? "" : command_line.args[0],
                                              config, hooks);
  } catch (const spotlight::config::ConfigError& e) {
    std::cerr << "spotlight-trainer: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "spotlight-trainer: " << e.what() << "\n";
    return 1;
  }
}
