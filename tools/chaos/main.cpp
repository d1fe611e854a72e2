// spotlight-chaos: the preemption driver (see driver.hpp, app.hpp).
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/config/error.hpp"
#include "common/log/log.hpp"
#include "tools/chaos/app.hpp"

int main(int argc, char** argv) {
  spotlight::log::set_component("chaos");
  try {
    const auto command =
        spotlight::chaos::parse_chaos_command(std::vector<std::string>(argv + 1, argv + argc));
    if (command.help) {
      std::cout << spotlight::chaos::chaos_usage();
      return 0;
    }
    return spotlight::chaos::run_chaos(command);
  } catch (const spotlight::config::ConfigError& e) {
    std::cerr << "spotlight-chaos: " << e.what() << "\n" << spotlight::chaos::chaos_usage();
    return 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << "spotlight-chaos: " << e.what() << "\n" << spotlight::chaos::chaos_usage();
    return 2;
  }
}
