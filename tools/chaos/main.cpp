// spotlight-chaos: the preemption driver (see driver.hpp, app.hpp).
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/log/log.hpp"
#include "tools/chaos/app.hpp"

int main(int argc, char** argv) {
  spotlight::log::set_component("chaos");
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << spotlight::chaos::chaos_usage();
    return 0;
  }
  try {
    return spotlight::chaos::run_chaos(spotlight::chaos::parse_chaos_command(args));
  } catch (const std::invalid_argument& e) {
    std::cerr << "spotlight-chaos: " << e.what() << "\n" << spotlight::chaos::chaos_usage();
    return 2;
  }
}
