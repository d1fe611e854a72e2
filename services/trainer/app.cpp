#include "services/trainer/app.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <numeric>
#include <sstream>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "common/cost/cost_config.hpp"
#include "common/cost/cost_reporter.hpp"
#include "common/log/log.hpp"
#include "common/metrics/server.hpp"
#include "common/model/safetensors.hpp"
#include "common/queue/redis_lease_queue.hpp"
#include "common/reward/reward_function.hpp"
#include "common/store/redis_key_value_store.hpp"
#include "common/store/redis_weight_store.hpp"
#include "common/task/generator.hpp"
#include "services/trainer/async_exploration.hpp"
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
  model::load_module_state(*policy.model(), model::load_safetensors(base));
  SPOTLIGHT_LOG(info) << "loaded base weights from " << base;
}

std::string format_validation(const ValidationReport& v) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(3) << "val geneval " << v.geneval_score << " reward "
    << v.mean_reward << " (";
  for (size_t i = 0; i < v.per_category.size(); ++i) {
    s << (i ? " " : "") << v.per_category[i].first << " " << std::setprecision(2)
      << v.per_category[i].second;
  }
  s << ")";
  return s.str();
}

}  // namespace

int run_pretrain(const config::Config& c) {
  apply_threads(c);
  policy::Policy policy(policy_options(c), task_options(c));
  const auto options = pretrain_options(c);
  SPOTLIGHT_LOG(info) << "pretraining preset " << c.get_string("model.preset") << " for "
                      << options.steps << " steps of " << options.batch << " images";
  const auto report = pretrain(policy, options, [](const PretrainProgress& p) {
    SPOTLIGHT_LOG(info) << "pretrain step " << p.step << " loss " << std::fixed
                        << std::setprecision(4) << p.loss << " " << std::setprecision(1)
                        << p.seconds << " s";
  });
  const auto out = base_output(c);
  fs::create_directories(out.parent_path().empty() ? "." : out.parent_path());
  auto state = model::module_state(*policy.model());
  state.metadata = {{"preset", c.get_string("model.preset")},
                    {"pretrain.steps", std::to_string(report.steps)},
                    {"pretrain.seed", std::to_string(options.seed)},
                    {"pretrain.batch", std::to_string(options.batch)},
                    {"pretrain.lr", std::to_string(options.lr)}};
  model::save_safetensors(out, state);
  GrpoOptions g = grpo_options(c);
  g.run_dir.clear();
  auto reward = reward::make_task_reward(policy.task_options());
  GrpoTrainer evaluator(g, policy, *reward, make_random_seed_source({}));
  const auto validation = evaluator.validate();
  SPOTLIGHT_LOG(info) << "pretrained in " << std::fixed << std::setprecision(1) << report.seconds
                      << " s, final loss " << std::setprecision(4) << report.final_loss << "; base "
                      << format_validation(validation) << "; wrote " << out.string();
  Json summary{{"pretrain_seconds", report.seconds},
               {"steps", report.steps},
               {"final_loss", report.final_loss},
               {"base_geneval_score", validation.geneval_score},
               {"base_ocr_score", validation.ocr_score},
               {"base_mean_reward", validation.mean_reward},
               {"checkpoint", out.string()}};
  std::ofstream(out.string() + ".json") << summary.dump(2) << "\n";
  return 0;
}

int run_train(const config::Config& c) {
  apply_threads(c);
  const auto options = grpo_options(c);
  fs::create_directories(options.run_dir);
  std::ofstream(options.run_dir / "config.yaml") << c.dump();
  policy::Policy policy(policy_options(c), task_options(c));
  load_base(policy, c);
  std::unique_ptr<policy::Policy> reference;
  if (options.loss.kl_beta > 0) {
    reference = std::make_unique<policy::Policy>(policy_options(c), task_options(c));
    reference->copy_weights_from(policy);
  }
  auto reward = reward::make_task_reward(policy.task_options());
  ExplorationOptions exploration;
  exploration.group_size = options.group_size;
  exploration.candidates = options.candidates;
  exploration.sampler = options.sampler;
  if (options.exploration_steps > 0) exploration.sampler.steps = options.exploration_steps;
  exploration.chunk = options.micro_batch * 2;
  exploration.run_seed = options.seed;
  std::unique_ptr<SeedSource> seeds;
  if (options.mode == "none") {
    seeds = make_random_seed_source(exploration);
  } else if (options.mode == "sync") {
    seeds = make_sync_seed_source(exploration, policy, *reward);
  }
  // async: explorers (spot) explore with the previous weights; the trainer reads their results
  // and publishes its weights and progress for them and the planner.
  std::unique_ptr<queue::LeaseQueue> queue;
  std::unique_ptr<store::WeightStore> weight_store;
  std::unique_ptr<store::KeyValueStore> state;
  std::unique_ptr<bus::Publisher> bus;
  std::unique_ptr<RunPublisher> publisher;
  if (options.mode == "async") {
    const run::RunKeys keys(c.get_string("run.id"));
    const auto redis = run::redis_options(c);
    queue = std::make_unique<queue::RedisLeaseQueue>(redis, run::explore_queue_options(c));
    weight_store =
        std::make_unique<store::RedisWeightStore>(redis, store::WeightStoreOptions{keys.prefix});
    state = std::make_unique<store::RedisKeyValueStore>(redis, keys.prefix);
    if (const auto& endpoint = c.get_string("bus.trainer_endpoint"); !endpoint.empty()) {
      bus = std::make_unique<bus::Publisher>(run::trainer_bus_options(c));
      SPOTLIGHT_LOG(info) << "publishing notices on " << bus->bind(endpoint);
    }
    AsyncSeedOptions async;
    async.group_size = options.group_size;
    async.candidates = options.candidates;
    async.run_seed = options.seed;
    async.max_wait = std::chrono::duration<double>(c.get_double("exploration.max_wait_seconds"));
    seeds = std::make_unique<AsyncSeedSource>(async, *queue, state.get());
    publisher =
        std::make_unique<RunPublisher>(c.get_string("run.id"), *weight_store, *state, bus.get());
  }
  // Cost: the trainer holds reserved devices; waiting for explored seeds is its idle time. In
  // async runs the ledger in Redis sums every process of the run (explorers are spot).
  const cost::Prices prices = cost::prices_from(c);
  auto registry = std::make_shared<metrics::Registry>("trainer");
  const auto metrics_server =
      metrics::MetricsServer::start(*registry, metrics::metrics_server_options(c));
  if (metrics_server) SPOTLIGHT_LOG(info) << "metrics on " << metrics_server->url();
  cost::CostMeter meter(cost::DeviceClass::kReserved, cost::devices_from(c), prices);
  cost::CostReporter cost_reporter(meter, registry.get(), state.get());
  const auto run_cost = [&]() {
    cost_reporter.flush();
    return state ? cost::read_run_cost(*state, prices) : cost::run_cost_of(meter.usage(), prices);
  };
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
  trainer.run([&](const IterationReport& r) {
    trainer_metrics.observe(r);
    export_bus_counters();
    if (r.iteration < 0) {
      first_validation = r.validation;
      SPOTLIGHT_LOG(info) << "base model: " << format_validation(*r.validation);
      return;
    }
    last_wall = r.wall_seconds;
    explore_seconds += r.explore_seconds;
    if (options.mode == "async") meter.set_idle_seconds(explore_seconds);
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
      std::ofstream(options.run_dir / "cost.jsonl", std::ios::app) << line.dump() << "\n";
    } catch (const std::exception& e) {
      SPOTLIGHT_LOG(warn) << "cost ledger unavailable: " << e.what();
    }
    iteration_seconds += r.iteration_seconds;
    fallback_prompts += r.fallback_prompts;
    ++iterations_run;
    if (r.kendall_tau) taus.push_back(*r.kendall_tau);
    std::ostringstream line;
    line << std::fixed << std::setprecision(3) << "iter " << r.iteration + 1 << "/"
         << options.iterations << " reward " << r.reward_mean << " zero-std "
         << std::setprecision(2) << r.zero_std_ratio << " sel-var " << std::setprecision(4)
         << r.selected_variance << std::setprecision(1) << " | " << r.iteration_seconds
         << " s (explore " << r.explore_seconds << ", rollout " << r.rollout_seconds << ", train "
         << r.train_seconds << ")";
    if (r.kendall_tau) line << " tau " << std::setprecision(2) << *r.kendall_tau;
    if (r.validation) {
      last_validation = r.validation;
      line << " | " << format_validation(*r.validation);
    }
    SPOTLIGHT_LOG(info) << line.str();
  });
  Json summary{{"mode", options.mode},
               {"seed", options.seed},
               {"iterations", options.iterations},
               {"train_wall_seconds", last_wall}};
  if (first_validation) summary["base_geneval_score"] = first_validation->geneval_score;
  if (last_validation) summary["final_geneval_score"] = last_validation->geneval_score;
  if (last_validation) summary["final_ocr_score"] = last_validation->ocr_score;
  if (last_validation) summary["final_mean_reward"] = last_validation->mean_reward;
  if (!taus.empty()) summary["kendall_tau"] = taus;
  if (iterations_run > 0) {
    // explore_seconds is exploration on the critical path: sync explores, async waits for seeds.
    summary["mean_explore_seconds_on_critical_path"] = explore_seconds / iterations_run;
    summary["mean_iteration_seconds"] = iteration_seconds / iterations_run;
    summary["fallback_prompts"] = fallback_prompts;
  }
  if (queue) {
    const auto q = queue->stats();
    summary["queue"] = {{"results", q.results},
                        {"waiting", q.waiting},
                        {"leased", q.leased},
                        {"dead_letters", q.dead_letters},
                        {"enqueued_total", q.enqueued_total},
                        {"acked_total", q.acked_total},
                        {"reclaimed_total", q.reclaimed_total},
                        {"duplicate_results_total", q.duplicate_results_total}};
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
  std::ofstream(options.run_dir / "summary.json") << summary.dump(2) << "\n";
  if (first_validation && last_validation) {
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
  apply_threads(c);
  policy::Policy policy(policy_options(c), task_options(c));
  load_base(policy, c);
  auto reward = reward::make_task_reward(policy.task_options());
  GrpoOptions g = grpo_options(c);
  g.run_dir.clear();
  GrpoTrainer evaluator(g, policy, *reward, make_random_seed_source({}));
  const auto v = evaluator.validate();
  std::cout << format_validation(v) << std::endl;
  return 0;
}

int run_bench(const config::Config& c) {
  apply_threads(c);
  const std::string json = to_json(run_benchmark(bench_options(c)));
  std::cout << json << std::endl;
  if (const fs::path out = c.get_string("bench.output"); !out.empty()) {
    if (out.has_parent_path()) fs::create_directories(out.parent_path());
    std::ofstream(out) << json << "\n";
  }
  return 0;
}

int run_subcommand(const std::string& subcommand, const config::Config& c) {
  if (subcommand == "pretrain") return run_pretrain(c);
  if (subcommand == "train") return run_train(c);
  if (subcommand == "eval") return run_eval(c);
  if (subcommand == "bench") return run_bench(c);
  std::cerr << "usage: spotlight-trainer pretrain|train|eval|bench [--config FILE] [--set "
               "key=value]...\n";
  return 2;
}

}  // namespace spotlight::trainer
