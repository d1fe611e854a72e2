// spotlight-trainer of a core-only build (SPOTLIGHT_CORE_ONLY): the compute core's subcommands
// (commands.hpp) without the services' hooks: train supports exploration.mode none and sync.
// Errors end the process with one line and the exit codes of common/service/exit_codes.hpp
// (configuration 2, storage 6, anything else 1), as the services' guarded_main does.
#include <exception>
#include <iostream>

#include "common/config/command_line.hpp"
#include "common/config/error.hpp"
#include "common/durable/durable_file.hpp"
#include "common/log/log.hpp"
#include "common/service/exit_codes.hpp"
#include "services/trainer/commands.hpp"
#include "services/trainer/trainer_config.hpp"

int main(int argc, char** argv) {
  namespace service = spotlight::service;
  spotlight::log::set_component("trainer");
  try {
    spotlight::config::CommandLine command_line;
    const auto config = spotlight::config::load_or_exit(
        spotlight::trainer::trainer_schema(), argc, argv,
        "usage: spotlight-trainer pretrain|train|eval|validate|bench [options] (core-only build)",
        &command_line);
    spotlight::trainer::NoTrainHooks hooks;
    return spotlight::trainer::run_subcommand(command_line.args.empty() ? "" : command_line.args[0],
                                              config, hooks);
  } catch (const spotlight::config::ConfigError& e) {
    std::cerr << "spotlight-trainer: " << e.what() << "\n";
    return service::kExitConfig;
  } catch (const spotlight::durable::WriteError& e) {
    std::cerr << "spotlight-trainer: " << e.what() << "\n";
    return service::kExitStorage;
  } catch (const std::exception& e) {
    std::cerr << "spotlight-trainer: " << e.what() << "\n";
    return service::kExitFailure;
  }
}
