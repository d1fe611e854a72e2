// spotlight-sim: the cluster simulator's commands (tools/simulator/commands.hpp).
#include <exception>
#include <iostream>

#include "common/config/error.hpp"
#include "common/log/log.hpp"
#include "tools/simulator/commands.hpp"

int main(int argc, char** argv) {
  try {
    spotlight::log::set_level(spotlight::log::Level::kError);
    return spotlight::simulator::run_command_line(argc, argv);
  } catch (const spotlight::config::ConfigError& e) {
    std::cerr << "spotlight-sim: " << e.what() << "\n(spotlight-sim --help lists the commands)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "spotlight-sim: " << e.what() << "\n";
    return 1;
  }
}
