// spotlight-sim: the cluster simulator's commands (tools/simulator/commands.hpp).
#include <exception>
#include <iostream>

#include "common/log/log.hpp"
#include "tools/simulator/commands.hpp"

int main(int argc, char** argv) {
  using namespace spotlight::simulator;
  try {
    spotlight::log::set_level(spotlight::log::Level::kError);
    const Arguments arguments = parse_arguments(argc, argv);
    if (arguments.command == "--help" || arguments.command == "-h" || arguments.command == "help") {
      std::cout << kUsage;
      return 0;
    }
    return run_command(arguments);
  } catch (const UsageError& e) {
    std::cerr << "spotlight-sim: " << e.what() << "\n" << kUsage;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "spotlight-sim: " << e.what() << "\n";
    return 1;
  }
}
