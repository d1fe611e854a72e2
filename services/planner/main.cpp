// spotlight-planner: enqueues the seed tasks of exploration.mode=async (see planner.hpp, app.hpp).
#include "common/config/command_line.hpp"
#include "common/log/log.hpp"
#include "common/run/run_config.hpp"
#include "common/service/main_guard.hpp"
#include "services/planner/app.hpp"

int main(int argc, char** argv) {
  return spotlight::service::guarded_main("planner", [&] {
    spotlight::config::CommandLine command_line;
    const auto config =
        spotlight::config::load_or_exit(spotlight::run::run_schema(), argc, argv,
                                        "usage: spotlight-planner [options]", &command_line);
    if (!command_line.args.empty()) {
      spotlight::log::error("unexpected argument '{}'", command_line.args[0]);
      return 2;
    }
    // SIGTERM, SIGINT: the planner finishes its pass and exits 0 (run_planner's StopSignals).
    return spotlight::planner::run_planner(config);
  });
}
