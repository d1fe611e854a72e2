// spotlight-reward: scores images for prompts over ZeroMQ (see app.hpp, reward_service.hpp).
#include "common/config/command_line.hpp"
#include "common/log/log.hpp"
#include "common/service/main_guard.hpp"
#include "services/reward/app.hpp"
#include "services/reward/reward_config.hpp"

int main(int argc, char** argv) {
  return spotlight::service::guarded_main("reward", [&] {
    spotlight::config::CommandLine command_line;
    const auto config =
        spotlight::config::load_or_exit(spotlight::reward::reward_schema(), argc, argv,
                                        "usage: spotlight-reward [options]", &command_line);
    if (!command_line.args.empty()) {
      spotlight::log::error("unexpected argument '{}'", command_line.args[0]);
      return 2;
    }
    return spotlight::reward::run_reward_service(config);
  });
}
