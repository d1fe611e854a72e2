// spotlight-trainer: parses the configuration, runs one subcommand (see app.hpp).
#include "common/config/command_line.hpp"
#include "common/service/main_guard.hpp"
#include "services/trainer/app.hpp"
#include "services/trainer/trainer_config.hpp"

int main(int argc, char** argv) {
  return spotlight::service::guarded_main("trainer", [&] {
    spotlight::config::CommandLine command_line;
    const auto config = spotlight::config::load_or_exit(
        spotlight::trainer::trainer_schema(), argc, argv,
        "usage: spotlight-trainer pretrain|train|eval|validate|bench [options]\n"
        "       spotlight-trainer report RUN_DIR [OUT.html]\n"
        "       spotlight-trainer page PAGE.json OUT.html",
        &command_line);
    return spotlight::trainer::run_subcommand(command_line.args, config);
  });
}
