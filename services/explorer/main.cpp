// spotlight-explorer: a spot worker of exploration.mode=async (see app.hpp, explorer.hpp).
#include "common/config/command_line.hpp"
#include "common/run/run_config.hpp"
#include "common/service/main_guard.hpp"
#include "common/service/writable_dirs.hpp"
#include "services/explorer/app.hpp"
#include "services/job/job_schema.hpp"

int main(int argc, char** argv) {
  return spotlight::service::guarded_main("explorer", [&] {
    const auto config = spotlight::config::load_or_exit(spotlight::job::run_schema(), argc, argv,
                                                        "usage: spotlight-explorer [options]");
    spotlight::service::check_run_dir(config);
    return spotlight::explorer::run_explorer(config);
  });
}
