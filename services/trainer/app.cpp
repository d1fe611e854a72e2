#include "services/trainer/app.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <iomanip>
#include <iostream>
#include <numeric>
#include <sstream>
#include <stop_token>
#include <thread>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "common/cost/cost_config.hpp"
#include "common/cost/cost_reporter.hpp"
#include "common/durable/durable_file.hpp"
#include "common/log/log.hpp"
#include "common/metrics/server.hpp"
#include "common/model/safetensors.hpp"
#include "common/outage/retry.hpp"
#include "common/queue/redis_lease_queue.hpp"
#include "common/report/html.hpp"
#include "common/report/page_json.hpp"
#include "common/reward/remote_reward.hpp"
#include "common/reward/reward_function.hpp"
#include "common/service/exit_codes.hpp"
#include "common/signals/stop_signals.hpp"
#include "common/store/redis_key_value_store.hpp"
#include "common/store/redis_trajectory_store.hpp"
#include "common/store/redis_weight_store.hpp"
#include "common/task/generator.hpp"
#include "services/trainer/async_exploration.hpp"
#include "services/trainer/pretrain_cache.hpp"
#include "services/trainer/run_images.hpp"
#include "services/trainer/run_report.hpp"
#include "services/trainer/trainer_config.hpp"
#include "services/trainer/trainer_metrics.hpp"

namespace spotlight::trainer {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

void apply_threads(const config::Config& c) {
  if (const auto threads = c.get<int>("run.threads"); threads > 0) torch::set_num_threads(threads);
}

fs::path base_output(const config::Config& c) {
  const auto& out = c.get_string("pretrain.output");
  return out.empty() ? fs::path(c.get_string("run.dir")) / "base.safetensors" : fs::path(out);
}

void load_base(policy::Policy& policy, const config::Config& c) {
  const auto& base = c.get_string("model.base");
  if (base.empty()) return;
  if (std::error_code error; !fs::is_regular_file(base, error)) {
    throw config::ConfigError("model.base", "config: 'model.base' " + base +
                                                " is not a readable checkpoint file (in " +
                                                c.origin("model.base") + ")");
  }
  policy.load_state(model::load_safetensors(base));
  SPOTLIGHT_LOG(info) << "loaded base weights from " << base;
}

// The embedded task is scored in-process (the reward service's own scorer); a prompt file's
// prompts only by the reward service (run::check_model_config requires reward.endpoint).
std::unique_ptr<reward::RewardFunction> make_reward(const config::Config& c,
                                                    const policy::Policy& policy) {
  if (c.get_string("task.kind") != "prompt_file") {
    return reward::make_task_reward(policy.task_options());
  }
  // run::check_model_config has required reward.endpoint, so the options are there.
  return std::make_unique<reward::RemoteReward>(reward::remote_reward_options(c).value());
}

std::string format_validation(const ValidationReport& v) {
  std::ostringstream s;
  if (v.per_category.empty()) {  // a prompt file: graded by the reward function
    s << std::fixed << std::setprecision(4) << "val reward " << v.mean_reward << " correct "
      << std::setprecision(3) << v.geneval_score;
    return s.str();
  }
  s << std::fixed << std::setprecision(3) << "val geneval " << v.geneval_score << " reward "
    << v.mean_reward << " (";
  for (size_t i = 0; i < v.per_category.size(); ++i) {
    s << (i ? " " : "") << v.per_category[i].first << " " << std::setprecision(2)
      << v.per_category[i].second;
  }
  s << ")";
  return s.str();
}

// The newest validation grid, served read-only next to /metrics (dashboards show it).
constexpr const char* kLatestGridRoute = "/validation/latest.png";
constexpr std::uintmax_t kMaxServedGridBytes = std::uintmax_t{32} << 20;

metrics::ContentProvider latest_grid_route(fs::path file) {
  return [file = std::move(file)]() -> std::optional<std::string> {
    std::error_code ec;
    const auto size = fs::file_size(file, ec);
    if (ec || size > kMaxServedGridBytes) return std::nullopt;
    std::ifstream in(file, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    if (!in) return std::nullopt;
    return bytes.str();
  };
}

void write_report_logged(const fs::path& run_dir) {
  try {
    const auto path = write_run_report(run_dir);
    SPOTLIGHT_LOG(info) << "report: " << path.string() << " (" << fs::file_size(path) << " bytes)";
  } catch (const std::exception& e) {
    SPOTLIGHT_LOG(warn) << "report not written: " << e.what();
  }
}

}  // namespace

int run_pretrain(const config::Config& c) {
  policy::check_device(c);
  const std::string& cache_dir = c.get_string("pretrain.cache_dir");
  if (!cache_dir.empty() && !c.get_string("pretrain.output").empty()) {
    throw config::ConfigError("pretrain.cache_dir",
                              "config: set 'pretrain.cache_dir' or 'pretrain.output', not both");
  }
  const auto options = pretrain_options(c);
  const std::string key = recipe_key(c);
  fs::path out = cache_dir.empty() ? base_output(c) : cached_base(cache_dir, key);
  if (!cache_dir.empty() && fs::exists(out)) {
    SPOTLIGHT_LOG(info) << "using the cached base model " << out.string() << " (recipe key " << key
                        << ")";
    std::cout << out.string() << std::endl;
    return 0;
  }
  const fs::path dir = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  try {
    durable::check_writable_directory(dir);
  } catch (const durable::WriteError& e) {
    const char* k = !cache_dir.empty()                         ? "pretrain.cache_dir"
                    : !c.get_string("pretrain.output").empty() ? "pretrain.output"
                                                               : "run.dir";
    throw config::ConfigError(k, std::string("config: '") + k + "': " + e.what());
  }
  apply_threads(c);
  if (c.get_string("model.kind") != "native") {
    SPOTLIGHT_LOG(error) << "pretrain trains the built-in MMDiT (model.kind native); a "
                            "TorchScript model comes pretrained";
    return 2;
  }
  policy::Policy policy(policy_options(c), task_options(c));
  SPOTLIGHT_LOG(info) << "pretraining preset " << c.get_string("model.preset") << " for "
                      << options.steps << " steps of " << options.batch << " images (recipe key "
                      << key << ")";
  const auto report = pretrain(policy, options, [](const PretrainProgress& p) {
    SPOTLIGHT_LOG(info) << "pretrain step " << p.step << " loss " << std::fixed
                        << std::setprecision(4) << p.loss << " " << std::setprecision(1)
                        << p.seconds << " s";
  });
  const bool stopped_early = report.steps < options.steps;
  if (stopped_early) {
    SPOTLIGHT_LOG(warn) << "pretraining stopped early by pretrain.max_seconds ("
                        << options.max_seconds << " s) at step " << report.steps << " of "
                        << options.steps << ": this base is not the recipe's output";
    if (!cache_dir.empty()) out = cached_base(cache_dir, key, report.steps);
  }
  auto state = policy.state();
  state.metadata = {{"preset", c.get_string("model.preset")},
                    {"pretrain.recipe_key", key},
                    {"pretrain.steps", std::to_string(report.steps)},
                    {"pretrain.steps_planned", std::to_string(options.steps)},
                    {"pretrain.stopped_early", stopped_early ? "true" : "false"},
                    {"pretrain.seed", std::to_string(options.seed)},
                    {"pretrain.batch", std::to_string(options.batch)},
                    {"pretrain.lr", std::to_string(options.lr)}};
  // The checkpoint appears under its name last, after its summary: present means complete.
  const fs::path partial = out.string() + ".partial";
  model::save_safetensors(partial, state);
  GrpoOptions g = grpo_options(c);
  g.run_dir.clear();
  auto reward = reward::make_task_reward(policy.task_options());
  GrpoTrainer evaluator(g, policy, *reward, make_random_seed_source({}));
  const auto validation = evaluator.validate();
  SPOTLIGHT_LOG(info) << "pretrained in " << std::fixed << std::setprecision(1) << report.seconds
                      << " s, " << report.steps << "/" << options.steps << " steps, final loss "
                      << std::setprecision(4) << report.final_loss << "; base "
                      << format_validation(validation) << "; wrote " << out.string();
  Json summary{{"pretrain_seconds", report.seconds},
               {"steps", report.steps},
               {"steps_planned", options.steps},
               {"stopped_early", stopped_early},
               {"max_seconds", options.max_seconds},
               {"recipe_key", key},
               {"final_loss", report.final_loss},
               {"base_geneval_score", validation.geneval_score},
               {"base_ocr_score", validation.ocr_score},
               {"base_mean_reward", validation.mean_reward},
               {"checkpoint", out.string()}};
  durable::write_file(out.string() + ".json", summary.dump(2) + "\n");
  durable::rename(partial, out);
  std::cout << out.string() << std::endl;  // the only line on stdout: for scripts
  return 0;
}

int run_train(const config::Config& c, std::stop_token stop) {
  policy::check_device(c);
  const auto options = grpo_options(c);
  try {
    durable::check_writable_directory(options.run_dir);
  } catch (const durable::WriteError& e) {
    throw config::ConfigError("run.dir", std::string("config: 'run.dir': ") + e.what());
  }
  apply_threads(c);
  durable::write_file(options.run_dir / "config.yaml", c.dump());
  auto registry = std::make_shared<metrics::Registry>("trainer");
  // Redis calls of async runs wait through outages (one log line per change of state), up to
  // trainer.redis_outage_limit_seconds, and give up early on a stop request.
  outage::OutageTracker redis_health("redis", registry.get(), run::redis_backoff(c));
  const auto outage_limit = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::duration<double>(c.get_double("trainer.redis_outage_limit_seconds")));
  const outage::Retrier retry(redis_health, outage::RetryOptions{outage_limit, stop});
  policy::Policy policy(policy_options(c), task_options(c));
  load_base(policy, c);
  if (!policy.is_native()) {
    SPOTLIGHT_LOG(info) << "TorchScript model " << c.get_string("model.path") << ": "
                        << policy.trainable_parameters().size() << " of "
                        << policy.named_parameters().size() << " parameter tensors trained";
  }
  std::unique_ptr<policy::Policy> reference;
  if (options.loss.kl_beta > 0) {
    reference = std::make_unique<policy::Policy>(policy_options(c), task_options(c));
    reference->copy_weights_from(policy);
  }
  auto reward = make_reward(c, policy);
  ExplorationOptions exploration;
  exploration.group_size = options.group_size;
  exploration.candidates = options.candidates;
  exploration.sampler = options.sampler;
  if (options.exploration_steps > 0) exploration.sampler.steps = options.exploration_steps;
  exploration.chunk = options.micro_batch * 2;
  exploration.run_seed = options.seed;
  exploration.reuse = run::reuse(c);
  exploration.rollout_steps = options.sampler.steps;
  exploration.window = rollout::trained_steps(options.sampler.steps, options.train_step_begin,
                                              options.train_step_end);
  std::unique_ptr<SeedSource> seeds;
  if (options.mode == "none") {
    seeds = make_random_seed_source(exploration);
  } else if (options.mode == "sync") {
    seeds = make_sync_seed_source(exploration, policy, *reward);
  } else if (options.mode == "sync-stale") {
    seeds = make_sync_stale_seed_source(exploration, policy, *reward);
  }
  // async: explorers (spot) explore with the previous weights; the trainer reads their results
  // and publishes its weights and progress for them and the planner. offload: explorers sample
  // the rollouts with the current weights; the trainer waits for them and trains.
  const bool services = options.mode == "async" || options.mode == "offload";
  std::unique_ptr<queue::LeaseQueue> queue;
  std::unique_ptr<store::WeightStore> weight_store;
  std::unique_ptr<store::KeyValueStore> state;
  std::unique_ptr<store::TrajectoryStore> trajectories;
  std::unique_ptr<run::RunState> run_state;
  std::unique_ptr<bus::Publisher> bus;
  std::unique_ptr<RunPublisher> publisher;
  if (services) {
    const run::RunKeys keys(c.get_string("run.id"));
    const auto redis = run::redis_options(c);
    queue = std::make_unique<queue::RedisLeaseQueue>(redis, run::explore_queue_options(c));
    weight_store =
        std::make_unique<store::RedisWeightStore>(redis, store::WeightStoreOptions{keys.prefix});
    state = std::make_unique<store::RedisKeyValueStore>(redis, keys.prefix);
    run_state = std::make_unique<run::RunState>(*state, keys);
    // Refused credentials stop the trainer now, with one line (an unavailable Redis is waited for).
    outage::fail_fast_on_access_denied([&] { state->get(keys.trainer_iteration); });
    if (const auto& endpoint = c.get_string("bus.trainer_endpoint"); !endpoint.empty()) {
      bus = std::make_unique<bus::Publisher>(run::trainer_bus_options(c));
      SPOTLIGHT_LOG(info) << "publishing notices on " << bus->bind(endpoint);
    }
    AsyncSeedOptions async;
    async.run_id = c.get_string("run.id");
    async.group_size = options.group_size;
    async.candidates = options.candidates;
    async.run_seed = options.seed;
    async.max_wait = std::chrono::duration<double>(c.get_double("exploration.max_wait_seconds"));
    async.notices = c.get_bool("bus.subscribe");  // wait on the result bell
    async.resync = std::chrono::milliseconds(c.get_int("bus.resync_ms"));
    async.offload = options.mode == "offload";
    async.trajectories = async.offload || exploration.reuse == run::Reuse::kOffPolicy;
    async.run_id = c.get_string("run.id");
    async.rollout_sampler = options.sampler;
    async.window = exploration.window;
    async.latent_shape = policy.sample_shape();
    async.tensor_options = policy.tensor_options();
    async.stop = stop;
    if (async.trajectories) {
      trajectories =
          std::make_unique<store::RedisTrajectoryStore>(redis, run::trajectory_store_options(c));
    }
    seeds = std::make_unique<AsyncSeedSource>(async, *queue, run_state.get(), &retry,
                                              trajectories.get(), weight_store.get());
    publisher = std::make_unique<RunPublisher>(c.get_string("run.id"), *weight_store, *state,
                                               bus.get(), &retry);
  }
  // Cost: the trainer holds reserved devices; waiting for explored seeds is its idle time. In
  // async runs the ledger in Redis sums every process of the run (explorers are spot).
  const cost::Prices prices = cost::prices_from(c);
  auto server_options = metrics::metrics_server_options(c);
  const auto metrics_server = metrics::MetricsServer::start(*registry, server_options);
  if (metrics_server) {
    metrics_server->add_route(kLatestGridRoute, "image/png",
                              latest_grid_route(options.run_dir / "validation" / "latest.png"));
    SPOTLIGHT_LOG(info) << "metrics on " << metrics_server->url();
  }
  cost::CostMeter meter(cost::DeviceClass::kReserved, cost::devices_from(c), prices);
  cost::CostReporter cost_reporter(meter, registry.get(), state.get());
  const auto run_cost = [&]() {
    cost_reporter.flush();
    return state ? cost::read_run_cost(*state, prices) : cost::run_cost_of(meter.usage(), prices);
  };
  RunImages images(c, options, policy, *registry);
  seeds = images.wrap(std::move(seeds), state.get());
  GrpoTrainer trainer(options, policy, *reward, std::move(seeds), reference.get());
  trainer.set_observer(publisher.get());
  TrainerMetrics trainer_metrics(*registry, options.iterations,
                                 options.prompts_per_iteration * options.group_size);
  if (const auto next = trainer.resume(); next > 0) {
    SPOTLIGHT_LOG(info) << "resumed from checkpoint: next iteration " << next;
  }
  trainer_metrics.started(trainer.next_iteration());
  std::optional<ValidationReport> first_validation, last_validation;
  double last_wall = 0;
  std::vector<double> taus;
  double explore_seconds = 0, iteration_seconds = 0;
  int fallback_prompts = 0, iterations_run = 0;
  // Reuse totals (per iteration in metrics.jsonl).
  std::int64_t reused = 0, sampled = 0, off_policy = 0, rejected = 0, rollout_steps = 0;
  double max_abs_log_ratio = 0, clip_fraction_sum = 0, ratio_sum = 0;
  // The bus's rejects (garbage frames, refused handshakes), exported after every iteration.
  const metrics::Counter bus_rejected_frames =
      registry->counter("spotlight_trainer_bus_rejected_frames_total",
                        "Frames from bus peers that were not a subscription, dropped.");
  const metrics::Counter bus_handshake_failures =
      registry->counter("spotlight_trainer_bus_handshake_failures_total",
                        "Bus peers refused in the ZeroMQ (CURVE) handshake.");
  const auto export_bus_counters = [&] {
    if (!bus) return;
    const auto counters = bus->counters();
    bus_rejected_frames.inc(static_cast<double>(counters.rejected_frames) -
                            bus_rejected_frames.value());
    bus_handshake_failures.inc(static_cast<double>(counters.handshake_failures) -
                               bus_handshake_failures.value());
  };
  const auto on_iteration = [&](const IterationReport& r) {
    trainer_metrics.observe(r);
    export_bus_counters();
    images.observe(r);  // the grid of a validation, with the weights it validated
    if (r.iteration < 0) {
      first_validation = r.validation;
      if (r.validation) SPOTLIGHT_LOG(info) << "base model: " << format_validation(*r.validation);
      return;
    }
    last_wall = r.wall_seconds;
    explore_seconds += r.explore_seconds;
    // Waiting for the explorers (async: their seeds; offload: the rollouts) idles the trainer.
    if (services) meter.set_idle_seconds(explore_seconds);
    try {
      const cost::RunCost so_far = run_cost();
      Json line{{"iteration", r.iteration},
                {"wall_seconds", r.wall_seconds},
                {"cost", so_far.total()},
                {"reserved_cost", so_far.reserved_cost},
                {"spot_cost", so_far.spot_cost},
                {"reserved_device_seconds",
                 so_far.reserved_busy_device_seconds + so_far.reserved_idle_device_seconds},
                {"spot_device_seconds",
                 so_far.spot_busy_device_seconds + so_far.spot_idle_device_seconds}};
      if (r.validation) line["geneval_score"] = r.validation->geneval_score;
      durable::append_file(options.run_dir / "cost.jsonl", line.dump() + "\n");
    } catch (const std::exception& e) {
      SPOTLIGHT_LOG(warn) << "cost ledger unavailable: " << e.what();
    }
    iteration_seconds += r.iteration_seconds;
    fallback_prompts += r.fallback_prompts;
    ++iterations_run;
    reused += r.rollouts_reused;
    sampled += r.rollouts_sampled;
    off_policy += r.rollouts_off_policy;
    rollout_steps += r.rollout_sampler_steps;
    for (const auto& [reason, n] : r.trajectories_rejected)
      rejected += n;
    max_abs_log_ratio = std::max(max_abs_log_ratio, r.ratio_max_abs_log);
    clip_fraction_sum += r.clip_fraction;
    ratio_sum += r.ratio_mean;
    if (r.kendall_tau) taus.push_back(*r.kendall_tau);
    std::ostringstream line;
    line << std::fixed << std::setprecision(3) << "iter " << r.iteration + 1 << "/"
         << options.iterations << " reward " << r.reward_mean << " zero-std "
         << std::setprecision(2) << r.zero_std_ratio << " sel-var " << std::setprecision(4)
         << r.selected_variance << std::setprecision(1) << " | " << r.iteration_seconds
         << " s (explore " << r.explore_seconds << ", rollout " << r.rollout_seconds << ", train "
         << r.train_seconds << ")";
    if (r.rollouts_reused > 0) {
      line << " reused " << r.rollouts_reused << "/" << r.rollouts_reused + r.rollouts_sampled;
      if (r.rollouts_off_policy > 0) {
        line << std::setprecision(4) << " ratio " << r.ratio_mean << " max|log| "
             << r.ratio_max_abs_log << " clipped " << std::setprecision(2) << r.clip_fraction;
      }
    }
    if (r.kendall_tau) line << " tau " << std::setprecision(2) << *r.kendall_tau;
    if (r.validation) {
      last_validation = r.validation;
      line << " | " << format_validation(*r.validation);
    }
    SPOTLIGHT_LOG(info) << line.str();
  };
  bool finished = false;
  try {
    finished = trainer.run(on_iteration, stop);
  } catch (const outage::OutageLimitExceeded& e) {
    SPOTLIGHT_LOG(error) << e.what() << " (trainer.redis_outage_limit_seconds): exiting with code "
                         << service::kExitOutageLimit << "; the newest checkpoint holds iterations "
                         << "0.." << trainer.next_iteration() - 1
                         << ", a restart resumes at iteration " << trainer.next_iteration();
    return service::kExitOutageLimit;
  }
  if (!finished) {
    SPOTLIGHT_LOG(info) << "stopped: iterations 0.." << trainer.next_iteration() - 1
                        << " are checkpointed; a restart resumes at iteration "
                        << trainer.next_iteration();
  }
  Json summary{{"mode", options.mode},
               {"seed", options.seed},
               {"iterations", options.iterations},
               {"train_wall_seconds", last_wall}};
  if (first_validation) summary["base_geneval_score"] = first_validation->geneval_score;
  if (first_validation) summary["base_mean_reward"] = first_validation->mean_reward;
  if (last_validation) summary["final_geneval_score"] = last_validation->geneval_score;
  if (last_validation) summary["final_ocr_score"] = last_validation->ocr_score;
  if (last_validation) summary["final_mean_reward"] = last_validation->mean_reward;
  if (!taus.empty()) summary["kendall_tau"] = taus;
  if (iterations_run > 0) {
    // explore_seconds is exploration on the critical path: sync explores, async waits for seeds.
    summary["mean_explore_seconds_on_critical_path"] = explore_seconds / iterations_run;
    summary["mean_iteration_seconds"] = iteration_seconds / iterations_run;
    summary["fallback_prompts"] = fallback_prompts;
    summary["reuse"] = {{"setting", c.get_string("exploration.reuse")},
                        {"rollouts_reused", reused},
                        {"rollouts_sampled", sampled},
                        {"rollouts_off_policy", off_policy},
                        {"trajectories_rejected", rejected},
                        {"rollout_sampler_steps", rollout_steps},
                        {"ratio_mean", ratio_sum / iterations_run},
                        {"ratio_max_abs_log", max_abs_log_ratio},
                        {"clip_fraction_mean", clip_fraction_sum / iterations_run}};
  }
  if (queue) {
    try {
      const auto q = queue->stats();
      summary["queue"] = {{"results", q.results},
                          {"waiting", q.waiting},
                          {"leased", q.leased},
                          {"dead_letters", q.dead_letters},
                          {"enqueued_total", q.enqueued_total},
                          {"acked_total", q.acked_total},
                          {"reclaimed_total", q.reclaimed_total},
                          {"duplicate_results_total", q.duplicate_results_total},
                          {"quarantined_total", q.quarantined_total},
                          {"requeued_total", q.requeued_total}};
    } catch (const std::exception& e) {  // Redis away at the end: the summary is written anyway
      SPOTLIGHT_LOG(warn) << "queue statistics unavailable for summary.json: " << e.what();
    }
  }
  try {
    const cost::RunCost total = run_cost();
    summary["cost"] = {{"total", total.total()},
                       {"reserved", total.reserved_cost},
                       {"spot", total.spot_cost},
                       {"reserved_busy_device_seconds", total.reserved_busy_device_seconds},
                       {"reserved_idle_device_seconds", total.reserved_idle_device_seconds},
                       {"spot_busy_device_seconds", total.spot_busy_device_seconds},
                       {"spot_idle_device_seconds", total.spot_idle_device_seconds},
                       {"reserved_price_per_hour", prices.reserved_per_hour},
                       {"spot_price_ratio", prices.spot_ratio}};
  } catch (const std::exception& e) {
    SPOTLIGHT_LOG(warn) << "cost ledger unavailable: " << e.what();
  }
  durable::write_file(options.run_dir / "summary.json", summary.dump(2) + "\n");
  write_report_logged(options.run_dir);
  if (first_validation && last_validation && first_validation->per_category.empty()) {
    // A prompt file: the reward service grades validation.
    SPOTLIGHT_LOG(info) << std::fixed << std::setprecision(4) << "done: validation reward "
                        << first_validation->mean_reward << " -> " << last_validation->mean_reward
                        << " (" << std::showpos
                        << last_validation->mean_reward - first_validation->mean_reward
                        << std::noshowpos << ") in " << std::setprecision(1) << last_wall
                        << " s of training";
  } else if (first_validation && last_validation) {
    SPOTLIGHT_LOG(info) << std::fixed << std::setprecision(3) << "done: validation geneval "
                        << first_validation->geneval_score << " -> "
                        << last_validation->geneval_score << " (" << std::showpos
                        << last_validation->geneval_score - first_validation->geneval_score
                        << std::noshowpos << ") in " << std::setprecision(1) << last_wall
                        << " s of training";
  }
  return 0;
}

int run_eval(const config::Config& c) {
  policy::check_device(c);
  apply_threads(c);
  policy::Policy policy(policy_options(c), task_options(c));
  load_base(policy, c);
  auto reward = make_reward(c, policy);
  GrpoOptions g = grpo_options(c);
  g.run_dir.clear();
  GrpoTrainer evaluator(g, policy, *reward, make_random_seed_source({}));
  const auto v = evaluator.validate();
  std::cout << format_validation(v) << std::endl;
  return 0;
}

int run_validate(const config::Config& c) {
  policy::check_device(c);
  apply_threads(c);
  policy::Policy policy(policy_options(c), task_options(c));
  auto reward = reward::make_task_reward(policy.task_options());
  const GrpoOptions options = grpo_options(c);
  GrpoTrainer evaluator(options, policy, *reward, make_random_seed_source({}));
  // The validation grids of deferred validation points, drawn with each point's weights.
  metrics::Registry registry("trainer");
  RunImages images(c, options, policy, registry);
  const auto start = std::chrono::steady_clock::now();
  const int scored = evaluator.validate_deferred([&](int64_t version, const ValidationReport& v) {
    IterationReport r;
    r.iteration = version - 1;
    r.validation = v;
    images.observe(r);
  });
  SPOTLIGHT_LOG(info)
      << "validated " << scored << " saved weights in " << std::fixed << std::setprecision(1)
      << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
      << " s into " << (fs::path(c.get_string("run.dir")) / "validation.jsonl");
  write_report_logged(c.get_string("run.dir"));
  return 0;
}

int run_bench(const config::Config& c) {
  policy::check_device(c);
  apply_threads(c);
  using Clock = std::chrono::steady_clock;
  torch::NoGradGuard no_grad;
  auto seconds = [](Clock::time_point s) {
    return std::chrono::duration<double>(Clock::now() - s).count();
  };
  // Reference: this machine's sgemm, measured in the same run.
  const int64_t n = 1024;
  auto a = torch::randn({n, n}), b = torch::randn({n, n});
  torch::mm(a, b);
  int reps = 0;
  auto start = Clock::now();
  while (seconds(start) < 1.0 || reps < 3) {
    torch::mm(a, b);
    ++reps;
  }
  const double sgemm_gflops = 2.0 * n * n * n * reps / seconds(start) / 1e9;

  policy::Policy policy(policy_options(c), task_options(c));
  load_base(policy, c);
  const int64_t batch = 64;
  const auto source = run::prompt_source(c);
  std::vector<task::Prompt> prompts = source->validation(static_cast<int>(batch));
  for (uint64_t i = 0; static_cast<int64_t>(prompts.size()) < batch; ++i)
    prompts.push_back(source->sample(i));
  const auto shape = policy.sample_shape();
  auto x = torch::randn({batch, shape[0], shape[1], shape[2]}, policy.tensor_options());
  auto t = torch::full({batch}, 0.5, policy.tensor_options());
  // Conditioned inside the loop, as the trainer's steps are (the MMDiT encodes its text).
  const auto forward = [&] { return policy.velocity(x, t, policy.condition(prompts)); };
  forward();
  reps = 0;
  start = Clock::now();
  while (seconds(start) < 2.0 || reps < 3) {
    forward();
    ++reps;
  }
  const double forward_seconds = seconds(start) / reps;
  const int64_t macs = policy.is_native() ? policy.model_options().macs_per_sample() : 0;
  const double forward_gflops = 2.0 * macs * batch / forward_seconds / 1e9;

  std::vector<uint64_t> seeds(batch);
  std::iota(seeds.begin(), seeds.end(), 0);
  sampler::SamplerOptions sampling;
  sampling.steps = c.get<int>("sampler.steps");
  sampling.noise_level = c.get_double("sampler.noise_level");
  policy.sample(prompts, seeds, sampling, static_cast<int>(batch));
  reps = 0;
  start = Clock::now();
  while (seconds(start) < 2.0 || reps < 2) {
    policy.sample(prompts, seeds, sampling, static_cast<int>(batch));
    ++reps;
  }
  const double images_per_second = static_cast<double>(batch) * reps / seconds(start);
  Json out{
      {"threads", torch::get_num_threads()},
      {"sgemm_gflops", sgemm_gflops},
      {"forward_batch", batch},
      {"forward_ms", forward_seconds * 1e3},
      {"forward_gflops", forward_gflops},  // 0 when the MACs are unknown (torchscript)
      {"forward_fraction_of_sgemm", forward_gflops / sgemm_gflops},
      {"sampler_steps", sampling.steps},
      {"sampler_images_per_second", images_per_second},
      {"model", policy.is_native() ? c.get_string("model.preset") : c.get_string("model.path")},
      {"macs_per_sample", macs}};
  std::cout << out.dump(2) << std::endl;
  return 0;
}

int run_train(const config::Config& c) {
  // First, before any thread exists; a signal that arrives while starting is kept.
  signals::StopSignals signals;
  std::stop_source stop;      // asks the trainer to stop
  std::stop_source finished;  // run_train returned, whatever the reason
  std::promise<int> result;
  auto done = result.get_future();
  std::jthread worker([&] {
    try {
      result.set_value(run_train(c, stop.get_token()));
    } catch (...) {
      result.set_exception(std::current_exception());
    }
    finished.request_stop();
  });
  if (const auto signo = signals.wait(finished.get_token())) {
    const auto grace = std::chrono::duration<double>(c.get_double("trainer.grace_seconds"));
    SPOTLIGHT_LOG(info) << "received " << signals::signal_name(*signo)
                        << ": abandoning the iteration in progress, exiting within "
                        << grace.count() << " s";
    stop.request_stop();
    if (done.wait_for(grace) != std::future_status::ready) {
      SPOTLIGHT_LOG(error) << "did not stop within trainer.grace_seconds (" << grace.count()
                           << " s); exiting with code " << service::kExitGraceExceeded
                           << " (the newest complete checkpoint is intact)";
      std::_Exit(service::kExitGraceExceeded);
    }
  }
  worker.join();
  return done.get();
}

int run_report_command(const std::vector<std::string>& args) {
  if (args.size() < 2 || args.size() > 3) {
    std::cerr << "usage: spotlight-trainer report RUN_DIR [OUT.html]\n";
    return 2;
  }
  try {
    const auto path = write_run_report(args[1], args.size() == 3 ? fs::path(args[2]) : fs::path());
    std::cout << path.string() << std::endl;
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "spotlight-trainer report: " << e.what() << "\n";
    return 1;
  }
}

int run_page_command(const std::vector<std::string>& args) {
  if (args.size() != 3) {
    std::cerr << "usage: spotlight-trainer page PAGE.json OUT.html\n";
    return 2;
  }
  try {
    std::ifstream in(args[1], std::ios::binary);
    if (!in) throw std::runtime_error("cannot read '" + args[1] + "'");
    std::ostringstream json;
    json << in.rdbuf();
    const fs::path page_file(args[1]);
    const auto page = report::page_from_json(json.str(), page_file.parent_path());
    report::write_html(args[2], page);
    std::cout << args[2] << std::endl;
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "spotlight-trainer page: " << e.what() << "\n";
    return 1;
  }
}

int run_subcommand(const std::vector<std::string>& args, const config::Config& c) {
  const std::string subcommand = args.empty() ? "" : args[0];
  if (subcommand == "pretrain") return run_pretrain(c);
  if (subcommand == "train") return run_train(c);
  if (subcommand == "eval") return run_eval(c);
  if (subcommand == "validate") return run_validate(c);
  if (subcommand == "bench") return run_bench(c);
  if (subcommand == "report") return run_report_command(args);
  if (subcommand == "page") return run_page_command(args);
  std::cerr << "usage: spotlight-trainer pretrain|train|eval|validate|bench [--config FILE] [--set "
               "key=value]...\n"
               "       spotlight-trainer report RUN_DIR [OUT.html]\n"
               "       spotlight-trainer page PAGE.json OUT.html\n";
  return 2;
}

int run_subcommand(const std::string& subcommand, const config::Config& c) {
  return run_subcommand(std::vector<std::string>{subcommand}, c);
}

}  // namespace spotlight::trainer
