// spotlight-planner: enqueues the seed tasks of exploration.mode=async (see planner.hpp, app.hpp).
#include <filesystem>

#include "common/config/command_line.hpp"
#include "common/log/log.hpp"
#include "common/run/run_config.hpp"
#include "common/service/main_guard.hpp"
#include "common/service/writable_dirs.hpp"
#include "services/job/job_schema.hpp"
#include "services/planner/app.hpp"

int main(int argc, char** argv) {
  return spotlight::service::guarded_main("planner", [&] {
    spotlight::config::CommandLine command_line;
    const auto config =
        spotlight::config::load_or_exit(spotlight::job::run_schema(), argc, argv,
                                        "usage: spotlight-planner [options]", &command_line);
    if (!command_line.args.empty()) {
      spotlight::log::error("unexpected argument '{}'", command_line.args[0]);
      return 2;
    }
    spotlight::service::check_run_dir(config);  // where planner.jsonl goes by default
    if (const auto& file = config.get_string("planner.decisions_file"); !file.empty()) {
      spotlight::service::check_writable_directory("planner.decisions_file",
                                                   std::filesystem::absolute(file).parent_path());
    }
    // SIGTERM, SIGINT: the planner finishes its pass and exits 0 (run_planner's StopSignals).
    return spotlight::planner::run_planner(config);
  });
}
