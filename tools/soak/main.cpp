// spotlight-soak: the soak as a program (see soak.hpp, command_line.hpp).
#include <fstream>
#include <iostream>
#include <thread>

#include "common/config/error.hpp"
#include "common/log/log.hpp"
#include "common/signals/stop_signals.hpp"
#include "tools/soak/command_line.hpp"

int main(int argc, char** argv) {
  namespace soak = spotlight::soak;
  spotlight::log::set_component("soak");
  try {
    auto command = soak::parse_soak_command({argv + 1, argv + argc}, argv[0]);
    if (command.help) {
      std::cout << soak::soak_usage();
      return 0;
    }
    if (!command.quiet) command.options.echo = &std::cerr;
    spotlight::signals::StopSignals signals;  // SIGTERM, SIGINT: stop the job, still report
    std::stop_source stop;
    std::jthread watcher([&](std::stop_token done) {
      if (signals.wait(done)) stop.request_stop();
    });
    const soak::SoakReport report = soak::run_soak(command.options, stop.get_token());
    std::cout << report.to_json() << std::endl;
    if (!command.report.empty()) std::ofstream(command.report) << report.to_json() << "\n";
    return report.ok() ? 0 : 1;
  } catch (const spotlight::config::ConfigError& e) {
    std::cerr << "spotlight-soak: " << e.what() << "\n" << soak::soak_usage();
    return 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << "spotlight-soak: " << e.what() << "\n" << soak::soak_usage();
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "spotlight-soak: " << e.what() << "\n";
    return 1;
  }
}
