#include "services/planner/app.hpp"

#include <exception>
#include <memory>
#include <stop_token>
#include <string>
#include <thread>

#include "common/log/log.hpp"
#include "common/metrics/server.hpp"
#include "common/run/task_signature.hpp"
#include "common/service/main_guard.hpp"
#include "common/signals/stop_signals.hpp"
#include "services/planner/planner_config.hpp"

namespace spotlight::planner {

int run_planner(const config::Config& config) {
  try {
    signals::StopSignals signals;    // before the planner's thread starts
    (void)run::TaskKey::from_env();  // a malformed SPOTLIGHT_TASK_KEY stops the planner here
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
    int status = 0;
    std::exception_ptr failure;  // what ended the loop thread, rethrown here
    std::stop_source finished;
    std::jthread loop([&](std::stop_token stop) {
      try {
        status = planner->run(stop);
      } catch (...) {
        failure = std::current_exception();
      }
      finished.request_stop();
    });
    const auto signo = signals.wait(finished.get_token());
    loop.request_stop();
    loop.join();
    if (failure) std::rethrow_exception(failure);
    if (signo) log::info("stopped by {}", signals::signal_name(*signo));
    return status;
  } catch (const std::exception& e) {
    const int code = service::exit_code_for(e);  // 4: Redis refused our credentials
    log::error("planner failed: {} (exit code {})", e.what(), code);
    return code;
  }
}

}  // namespace spotlight::planner
