#include "services/reward/app.hpp"

#include <csignal>
#include <exception>
#include <stop_token>
#include <string>
#include <thread>

#include "common/config/error.hpp"
#include "common/log/log.hpp"
#include "common/metrics/server.hpp"
#include "common/signals/stop_signals.hpp"
#include "services/reward/memory_trim.hpp"
#include "services/reward/reward_config.hpp"
#include "services/reward/reward_service.hpp"

namespace spotlight::reward {
int run_reward_service(const config::Config& config) {
  try {
    // First, so that no thread (ZeroMQ, HTTP) exists before stop signals are handled; a signal
    // that arrives while starting is kept until wait() below.
    signals::StopSignals signals;
    use_separate_mappings_for_large_allocations();  // memory goes back after large requests

    std::unique_ptr<RewardFunction> reward;
    RewardServiceOptions options;
    try {
      reward = make_reward_function(config);
      options = reward_service_options(config);
    } catch (const config::ConfigError& e) {
      log::error("{}", e.what());
      return 2;
    }
    const std::string reward_name = reward->name();
    auto registry = std::make_shared<metrics::Registry>("reward");
    RewardService service(std::move(reward), options, registry);
    const auto metrics_server =
        metrics::MetricsServer::start(*registry, metrics::metrics_server_options(config));
    if (metrics_server) log::info("metrics on {}", metrics_server->url());
    const std::string endpoint = service.bind();
    log::info("listening on {} (reward {}, image size {}, max batch {})", endpoint, reward_name,
              options.task.image_size, options.max_batch);

    std::stop_source served;  // requested when run() returns, on a signal or on its own
    std::exception_ptr failure;
    std::jthread loop([&] {
      try {
        service.run();
      } catch (...) {
        failure = std::current_exception();
      }
      served.request_stop();
    });
    if (const auto signo = signals.wait(served.get_token())) {
      log::info("received {}, stopping", signals::signal_name(*signo));
      service.stop();
    }
    loop.join();
    if (failure) std::rethrow_exception(failure);
    const auto counters = service.rpc_counters();
    log::info("stopped after {} requests ({} rejected by the RPC layer)", counters.requests,
              counters.malformed);
    return 0;
  } catch (const std::exception& e) {
    log::error("reward service failed: {}", e.what());
    return 1;
  }
}

}  // namespace spotlight::reward
