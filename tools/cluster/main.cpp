// spotlight-cluster: one job's processes on this machine (see command_line.cpp's usage).
#include <iostream>
#include <thread>

#include "common/config/error.hpp"
#include "common/log/log.hpp"
#include "common/signals/stop_signals.hpp"
#include "tools/cluster/launcher.hpp"

int main(int argc, char** argv) {
  namespace cluster = spotlight::cluster;
  spotlight::log::set_component("cluster");
  try {
    auto options = cluster::parse_launcher_command_line({argv + 1, argv + argc}, argv[0]);
    if (options.help) {
      std::cout << cluster::kUsage;
      return 0;
    }
    spotlight::signals::StopSignals signals;  // SIGTERM, SIGINT: stop the job cleanly
    std::stop_source stop;
    std::jthread watcher([&](std::stop_token done) {
      if (signals.wait(done)) stop.request_stop();
    });
    return cluster::run_launcher(std::move(options), stop.get_token());
  } catch (const std::invalid_argument& e) {
    std::cerr << "spotlight-cluster: " << e.what() << "\n";
    return 2;
  } catch (const spotlight::config::ConfigError& e) {
    std::cerr << "spotlight-cluster: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "spotlight-cluster: " << e.what() << "\n";
    return 1;
  }
}
