#include "services/explorer/app.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <exception>
#include <future>
#include <memory>
#include <stop_token>
#include <string>
#include <thread>

#include <ATen/Parallel.h>

#include "common/cost/cost_config.hpp"
#include "common/cost/cost_flusher.hpp"
#include "common/log/log.hpp"
#include "common/metrics/server.hpp"
#include "common/outage/failure.hpp"
#include "common/policy/policy.hpp"
#include "common/queue/redis_lease_queue.hpp"
#include "common/reward/remote_reward.hpp"
#include "common/run/bus_subscription.hpp"
#include "common/run/run_config.hpp"
#include "common/run/task_key_source.hpp"
#include "common/run/task_signature.hpp"
#include "common/service/exit_codes.hpp"
#include "common/service/main_guard.hpp"
#include "common/signals/stop_signals.hpp"
#include "common/store/redis_key_value_store.hpp"
#include "common/store/redis_trajectory_store.hpp"
#include "common/store/redis_weight_store.hpp"
#include "services/explorer/explorer.hpp"
#include "services/explorer/preemption_notice.hpp"
#include "services/explorer/sp_sampler.hpp"
#include "services/explorer/weights_prefetch.hpp"

namespace spotlight::explorer {
namespace {

using service::kExitGraceExceeded;
// Slack on top of the grace period before the process gives up on its explorer thread.
constexpr std::chrono::seconds kWatchdogSlack{5};

// Runs the explorer on its own thread until it returns, a stop signal arrives or the preemption
// watcher sees a notice; after a signal or a notice the explorer gets its grace period (and the
// watchdog's slack) to hand its leases back, else the process exits at once. Returns what the
// explorer's run() threw.
std::exception_ptr run_until_stopped(Explorer& explorer, signals::StopSignals& signals,
                                     const PreemptionNoticeOptions& notice_options,
                                     const ExplorerOptions& options) {
  std::stop_source finished;  // requested when the explorer returns, whatever the reason
  std::stop_source wake;      // the loop finished or a notice came
  std::promise<void> done;
  auto done_future = done.get_future();
  std::exception_ptr failure;
  std::jthread loop([&](std::stop_token stop) {
    try {
      explorer.run(stop);
    } catch (...) {
      failure = std::current_exception();
    }
    finished.request_stop();
    done.set_value();
  });
  // A notice from the file/URL watcher wakes the wait below like the loop's end does.
  std::atomic<bool> noticed{false};
  std::stop_callback on_finished(finished.get_token(), [&] { wake.request_stop(); });
  PreemptionWatcher watcher(notice_options, [&](const std::string& reason) {
    log::info("preemption notice: {}", reason);
    noticed = true;
    wake.request_stop();
  });
  const auto signo = signals.wait(wake.get_token());
  if (signo || noticed) {
    explorer.metrics().preemption_notices.inc();
    log::info("{}: stopping within {} s",
              signo ? "received " + signals::signal_name(*signo) : std::string("notice"),
              std::chrono::duration<double>(options.grace_period).count());
    loop.request_stop();
    if (done_future.wait_for(options.grace_period + kWatchdogSlack) != std::future_status::ready) {
      log::error("explorer did not stop within the grace period; exiting anyway");
      std::_Exit(kExitGraceExceeded);
    }
  }
  loop.join();
  return failure;
}

void log_done(const ExplorerOptions& options, const ExplorerMetrics& m) {
  log::info(
      "explorer {} done: {} completed, {} duplicates, {} malformed, {} released; {} "
      "trajectories kept ({} bytes)",
      options.id, m.tasks_completed.value(), m.duplicate_results.value(), m.malformed_tasks.value(),
      m.tasks_released.value(), m.trajectories_kept.value(), m.trajectory_bytes.value());
}

}  // namespace

std::unique_ptr<reward::RewardFunction> make_explorer_reward(const config::Config& config,
                                                             const task::TaskOptions& task) {
  if (const auto options = reward::remote_reward_options(config)) {
    return std::make_unique<reward::RemoteReward>(*options);
  }
  return reward::make_task_reward(task);
}

PreemptionNoticeOptions preemption_notice_options(const config::Config& config) {
  PreemptionNoticeOptions o;
  o.file = config.get_string("explorer.preemption_notice_file");
  o.url = config.get_string("explorer.preemption_notice_url");
  o.poll_interval = std::chrono::milliseconds(config.get_int("explorer.preemption_poll_ms"));
  o.validate();
  return o;
}

int run_explorer(const config::Config& config) {
  try {
    // First, before any thread exists; a signal that arrives while starting is kept.
    signals::StopSignals signals;

    policy::check_device(config);  // before anything is placed on it
    const ExplorerOptions options = explorer_options(config);
    (void)run::TaskKey::from_env();  // a malformed SPOTLIGHT_TASK_KEY stops the explorer here
    const PreemptionNoticeOptions notice_options = preemption_notice_options(config);
    if (const auto threads = config.get<int>("run.threads"); threads > 0) {
      at::set_num_threads(threads);
    }
    const run::RunKeys keys(options.run_id);
    auto redis = run::redis_options(config);
    redis.client_name = "explorer:" + options.id;
    queue::RedisLeaseQueue queue(redis, run::explore_queue_options(config));
    // Weights whose manifest is not signed with the run's key are refused (counted, logged).
    store::WeightStoreOptions weight_options;
    weight_options.key_prefix = keys.prefix;
    weight_options.manifest_key = run::manifest_key_source(redis, keys.prefix, /*create=*/false);
    store::RedisWeightStore weights(redis, weight_options);
    store::RedisKeyValueStore kv(redis, keys.prefix);
    store::RedisTrajectoryStore trajectories(redis, run::trajectory_store_options(config));
    policy::Policy policy(run::policy_options(config), task::task_options(config));
    const auto reward = make_explorer_reward(config, policy.task_options());

    auto registry = std::make_shared<metrics::Registry>("explorer");
    const auto metrics_server =
        metrics::MetricsServer::start(*registry, metrics::metrics_server_options(config));
    if (metrics_server) log::info("metrics on {}", metrics_server->url());
    log::info("model {} on {}, reward {}",
              policy.is_native() ? "preset " + config.get_string("model.preset")
                                 : config.get_string("model.path"),
              config.get_string("model.device"), reward->name());

    // Refused credentials stop the explorer here, with one line, before any thread starts.
    outage::fail_fast_on_access_denied([&] { kv.get(keys.trainer_iteration); });
    Explorer explorer(options,
                      ExplorerParts{queue, weights, kv, *reward, policy, *registry, &trajectories});
    // Cost: spot devices, busy while sampling and scoring (the sample-time histogram's sum).
    store::RedisKeyValueStore cost_ledger(redis, keys.prefix);  // the flusher thread's own
    cost::CostMeter meter(cost::DeviceClass::kSpot, cost::devices_from(config),
                          cost::prices_from(config));
    cost::CostReporter cost_reporter(meter, registry.get(), &cost_ledger);
    cost::CostFlusher cost_flusher(
        cost_reporter, [&] { meter.set_busy_seconds(explorer.metrics().sample_seconds.sum()); },
        options.heartbeat_interval);
    std::unique_ptr<SpSampler> sp;  // explorer.sp.size > 1: chunks run on an SP group
    if (const auto sp_options = sp_sampler_options(config)) {
      sp = std::make_unique<SpSampler>(*sp_options, policy, *registry);
      explorer.set_chunk_sampler(std::ref(*sp));
    }
    // Weights notices: new versions are fetched, verified and loaded before a task asks for them
    // (on the prefetcher's thread and Redis connection; stopped before the explorer goes).
    std::unique_ptr<store::RedisWeightStore> prefetch_store;
    std::unique_ptr<WeightsPrefetcher> prefetcher;
    if (const auto bus = run::bus_subscription(config)) {
      weight_options.manifest_key = run::manifest_key_source(redis, keys.prefix, false);
      prefetch_store = std::make_unique<store::RedisWeightStore>(redis, weight_options);
      prefetcher =
          std::make_unique<WeightsPrefetcher>(*bus, *prefetch_store, explorer.policy_weights());
      log::info("following weights notices on {}", bus->endpoint);
    }
    const std::exception_ptr failure =
        run_until_stopped(explorer, signals, notice_options, options);
    prefetcher.reset();
    if (failure) std::rethrow_exception(failure);
    log_done(options, explorer.metrics());
    return 0;
  } catch (const std::exception& e) {
    const int code = service::exit_code_for(e);  // 2: bad model.device, 4: Redis refused us
    log::error("explorer failed: {} (exit code {})", e.what(), code);
    return code;
  }
}

}  // namespace spotlight::explorer
