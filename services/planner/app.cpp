#include "services/planner/app.hpp"

#include <csignal>
#include <exception>
#include <memory>
#include <string>

#include "common/log/log.hpp"
#include "common/metrics/server.hpp"
#include "common/service/main_guard.hpp"
#include "services/planner/planner_config.hpp"

namespace spotlight::planner {

int run_planner(const config::Config& config, const StopFlag& stop) {
  try {
    auto registry = std::make_shared<metrics::Registry>("planner");
    const auto planner = make_planner(config, registry);
    const auto server =
        metrics::MetricsServer::start(*registry, metrics::metrics_server_options(config));
    if (server) log::info("metrics on {}", server->url());
    const PlannerOptions& o = planner->options();
    const exploration::ExplorationDecision d = fixed_exploration(config);
    log::info(
        "planning run {} on {}:{}: {} iterations, {} prompts x {} candidates ({} steps; policy "
        "{}), lookahead {}, poll every {} ms",
        o.run_id, config.get_string("redis.host"), config.get_int("redis.port"), o.iterations,
        o.prompts_per_iteration, d.candidates, d.steps, config.get_string("planner.policy"),
        o.lookahead, o.poll_interval.count());
    const int status = planner->run(stop);
    if (const auto signo = stop.signal()) {
      log::info("stopped by {}", *signo == SIGTERM  ? std::string("SIGTERM")
                                 : *signo == SIGINT ? std::string("SIGINT")
                                                    : "signal " + std::to_string(*signo));
    }
    return status;
  } catch (const std::exception& e) {
    const int code = service::exit_code_for(e);  // 4: Redis refused our credentials
    log::error("planner failed: {} (exit code {})", e.what(), code);
    return code;
  }
}

}  // namespace spotlight::planner
