#include "services/trainer/app.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/cost/cost_config.hpp"
#include "common/cost/cost_reporter.hpp"
#include "common/durable/durable_file.hpp"
#include "common/log/log.hpp"
#include "common/metrics/server.hpp"
#include "common/outage/retry.hpp"
#include "common/queue/redis_lease_queue.hpp"
#include "common/report/html.hpp"
#include "common/report/page_json.hpp"
#include "common/reward/remote_reward.hpp"
#include "common/run/task_key_source.hpp"
#include "common/service/exit_codes.hpp"
#include "common/service/writable_dirs.hpp"
#include "common/store/redis_key_value_store.hpp"
#include "common/store/redis_trajectory_store.hpp"
#include "common/store/redis_weight_store.hpp"
#include "services/trainer/async_exploration.hpp"
#include "services/trainer/run_images.hpp"
#include "services/trainer/run_report.hpp"
#include "services/trainer/trainer_config.hpp"
#include "services/trainer/trainer_metrics.hpp"
#include "services/trainer/weights_publisher.hpp"

namespace spotlight::trainer {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

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

// HOST:PORT of rank `rank`'s metrics: PORT + rank (an ephemeral port 0, or no server, as is).
std::string rank_bind(const std::string& bind, int rank) {
  const auto colon = bind.rfind(':');
  if (bind.empty() || colon == std::string::npos) return bind;
  const int port = std::stoi(bind.substr(colon + 1));
  if (port == 0) return bind;
  return bind.substr(0, colon + 1) + std::to_string(port + rank);
}

void write_report_logged(const fs::path& run_dir) {
  try {
    const auto path = write_run_report(run_dir);
    SPOTLIGHT_LOG(info) << "report: " << path.string() << " (" << fs::file_size(path) << " bytes)";
  } catch (const std::exception& e) {
    SPOTLIGHT_LOG(warn) << "report not written: " << e.what();
  }
}

// The services around the core's training loop (train_hooks.hpp): exploration.mode async and
// offload with Redis outages ridden through, weights and progress published for explorers and
// the planner, /metrics, cost accounting, validation grids, exploration samples, the run report.
class ServicesHooks final : public TrainHooks {
 public:
  explicit ServicesHooks(const config::Config& c)
      : c_(c),
        registry_(std::make_shared<metrics::Registry>("trainer")),
        // Redis calls of async runs wait through outages (one log line per change of state), up
        // to trainer.redis_outage_limit_seconds, and give up early on a stop request.
        redis_health_("redis", registry_.get(), run::redis_backoff(c)) {}

  bool supports(run::ExplorationMode mode) const override { return run::needs_services(mode); }

  std::unique_ptr<SeedSource> seed_source(const GrpoOptions& options,
                                          const ExplorationOptions& exploration,
                                          policy::Policy& policy, std::stop_token stop) override {
    const auto outage_limit = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::duration<double>(c_.get_double("trainer.redis_outage_limit_seconds")));
    retry_.emplace(redis_health_, outage::RetryOptions{outage_limit, stop});
    // async: explorers (spot) explore with the previous weights; the trainer reads their results
    // and publishes its weights and progress for them and the planner. offload: explorers sample
    // the rollouts with the current weights; the trainer waits for them and trains.
    const run::RunKeys keys(c_.get_string("run.id"));
    const auto redis = run::redis_options(c_);
    queue_ = std::make_unique<queue::RedisLeaseQueue>(redis, run::explore_queue_options(c_));
    // Manifests signed with the run's key: explorers refuse weights that are not the trainer's.
    store::WeightStoreOptions weights{keys.prefix};
    weights.manifest_key = run::manifest_key_source(redis, keys.prefix, /*create=*/true);
    weight_store_ = std::make_unique<store::RedisWeightStore>(redis, weights);
    state_ = std::make_unique<store::RedisKeyValueStore>(redis, keys.prefix);
    run_state_ = std::make_unique<run::RunState>(*state_, keys);
    // Refused credentials stop the trainer now, with one line (an unavailable Redis is waited for).
    outage::fail_fast_on_access_denied([&] { state_->get(keys.trainer_iteration); });
    if (const auto& endpoint = c_.get_string("bus.trainer_endpoint"); !endpoint.empty()) {
      bus_ = std::make_unique<bus::Publisher>(run::trainer_bus_options(c_));
      SPOTLIGHT_LOG(info) << "publishing notices on " << bus_->bind(endpoint);
    }
    AsyncSeedOptions async;
    async.run_id = c_.get_string("run.id");
    async.group_size = options.group_size;
    async.candidates = options.candidates;
    async.run_seed = options.seed;
    async.max_wait = std::chrono::duration<double>(run::exploration_options(c_).max_wait_seconds);
    async.notices = c_.get_bool("bus.subscribe");  // wait on the result bell
    async.resync = std::chrono::milliseconds(c_.get_int("bus.resync_ms"));
    async.offload = options.mode == run::ExplorationMode::kOffload;
    async.trajectories = async.offload || exploration.reuse == run::Reuse::kOffPolicy;
    async.rollout_sampler = options.sampler;
    async.window = exploration.window;
    async.latent_shape = policy.sample_shape();
    async.tensor_options = policy.tensor_options();
    async.stop = stop;
    if (async.trajectories) {
      trajectories_ =
          std::make_unique<store::RedisTrajectoryStore>(redis, run::trajectory_store_options(c_));
    }
    auto seeds = std::make_unique<AsyncSeedSource>(async, *queue_, run_state_.get(), &*retry_,
                                                   trajectories_.get(), weight_store_.get());
    publisher_ = std::make_unique<RunPublisher>(c_.get_string("run.id"), *weight_store_, *state_,
                                                bus_.get(), &*retry_);
    return seeds;
  }

  void prepare(const GrpoOptions& options, policy::Policy& policy) override {
    options_ = options;
    // Cost: the trainer holds reserved devices; waiting for explored seeds is its idle time. In
    // async runs the ledger in Redis sums every process of the run (explorers are spot).
    prices_ = cost::prices_from(c_);
    metrics_server_ =
        metrics::MetricsServer::start(*registry_, metrics::metrics_server_options(c_));
    if (metrics_server_) {
      metrics_server_->add_route(kLatestGridRoute, "image/png",
                                 latest_grid_route(options.run_dir / "validation" / "latest.png"));
      SPOTLIGHT_LOG(info) << "metrics on " << metrics_server_->url();
    }
    // Rank 0 accounts for the whole trainer group: every rank holds its devices as long as it.
    meter_ = std::make_unique<cost::CostMeter>(
        cost::DeviceClass::kReserved, cost::devices_from(c_) * c_.get<int>("trainer.ranks"),
        prices_);
    cost_reporter_ = std::make_unique<cost::CostReporter>(*meter_, registry_.get(), state_.get());
    trainer_metrics_ = std::make_unique<TrainerMetrics>(
        *registry_, options.iterations, options.prompts_per_iteration * options.group_size);
    // Rank 0's own series, also in a group of one: the per-rank panels show a single trainer
    // (all-reduce 0) instead of no data.
    rank_metrics_ = std::make_unique<RankMetrics>(*registry_, 0, c_.get<int>("trainer.ranks"));
    // The bus's rejects (garbage frames, refused handshakes), exported after every iteration.
    bus_rejected_frames_ =
        registry_->counter("spotlight_trainer_bus_rejected_frames_total",
                           "Frames from bus peers that were not a subscription, dropped.");
    bus_handshake_failures_ =
        registry_->counter("spotlight_trainer_bus_handshake_failures_total",
                           "Bus peers refused in the ZeroMQ (CURVE) handshake.");
    images_ = std::make_unique<RunImages>(c_, options, policy, *registry_);
  }

  std::unique_ptr<SeedSource> wrap_seeds(std::unique_ptr<SeedSource> seeds) override {
    return images_->wrap(std::move(seeds), state_.get());
  }

  TrainerObserver* observer() override { return publisher_.get(); }

  void started(int64_t next_iteration) override { trainer_metrics_->started(next_iteration); }

  // Ranks other than 0 serve their own metrics on metrics.bind's port + rank.
  void prepare_rank(const GrpoOptions& options, int rank) override {
    options_ = options;
    auto server_options = metrics::metrics_server_options(c_);
    server_options.bind = rank_bind(server_options.bind, rank);
    metrics_server_ = metrics::MetricsServer::start(*registry_, server_options);
    if (metrics_server_) SPOTLIGHT_LOG(info) << "rank metrics on " << metrics_server_->url();
    rank_metrics_ = std::make_unique<RankMetrics>(*registry_, rank, c_.get<int>("trainer.ranks"));
  }

  void rank_observed(const IterationReport& r) override { rank_metrics_->observe(r); }

  void observed(const IterationReport& r) override {
    trainer_metrics_->observe(r);
    if (rank_metrics_) rank_metrics_->observe(r);
    export_bus_counters();
    images_->observe(r);  // the grid of a validation, with the weights it validated
  }

  void iteration_done(const IterationReport& r, double explore_seconds) override {
    // Waiting for the explorers (async: their seeds; offload: the rollouts) idles the trainer.
    if (supports(options_.mode)) meter_->set_idle_seconds(explore_seconds);
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
      durable::append_file(options_.run_dir / "cost.jsonl", line.dump() + "\n");
    } catch (const std::exception& e) {
      SPOTLIGHT_LOG(warn) << "cost ledger unavailable: " << e.what();
    }
  }

  std::optional<int> failed(const std::exception& error, int64_t next_iteration) override {
    const auto* limit = dynamic_cast<const outage::OutageLimitExceeded*>(&error);
    if (limit == nullptr) return std::nullopt;
    SPOTLIGHT_LOG(error) << limit->what()
                         << " (trainer.redis_outage_limit_seconds): exiting with code "
                         << service::kExitOutageLimit << "; the newest checkpoint holds iterations "
                         << "0.." << next_iteration - 1 << ", a restart resumes at iteration "
                         << next_iteration;
    return service::kExitOutageLimit;
  }

  std::unique_ptr<reward::RewardFunction> remote_reward(const config::Config& c) override {
    // run::check_model_config has required reward.endpoint, so the options are there.
    return std::make_unique<reward::RemoteReward>(reward::remote_reward_options(c).value());
  }

  void summarize(Json& summary) override {
    if (queue_) {
      try {
        const auto q = queue_->stats();
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
                         {"reserved_price_per_hour", prices_.reserved_per_hour},
                         {"spot_price_ratio", prices_.spot_ratio}};
    } catch (const std::exception& e) {
      SPOTLIGHT_LOG(warn) << "cost ledger unavailable: " << e.what();
    }
  }

  void finished(const fs::path& run_dir) override { write_report_logged(run_dir); }

  // validate: the validation grids of deferred validation points, drawn with each point's weights.
  void validating(const GrpoOptions& options, policy::Policy& policy) override {
    images_ = std::make_unique<RunImages>(c_, options, policy, *registry_);
  }
  void validated(const IterationReport& r) override { images_->observe(r); }

 private:
  cost::RunCost run_cost() {
    cost_reporter_->flush();
    return state_ ? cost::read_run_cost(*state_, prices_)
                  : cost::run_cost_of(meter_->usage(), prices_);
  }

  void export_bus_counters() {
    if (!bus_) return;
    const auto counters = bus_->counters();
    bus_rejected_frames_->inc(static_cast<double>(counters.rejected_frames) -
                              bus_rejected_frames_->value());
    bus_handshake_failures_->inc(static_cast<double>(counters.handshake_failures) -
                                 bus_handshake_failures_->value());
  }

  const config::Config& c_;
  GrpoOptions options_;
  // Members are destroyed in reverse order: the cost reporter's last flush still reaches the
  // state store, and the seed source and publisher (in run_train) are gone before the retrier.
  std::shared_ptr<metrics::Registry> registry_;
  outage::OutageTracker redis_health_;
  std::optional<outage::Retrier> retry_;
  std::unique_ptr<queue::LeaseQueue> queue_;
  std::unique_ptr<store::WeightStore> weight_store_;
  std::unique_ptr<store::KeyValueStore> state_;
  std::unique_ptr<store::TrajectoryStore> trajectories_;
  std::unique_ptr<run::RunState> run_state_;
  std::unique_ptr<bus::Publisher> bus_;
  std::unique_ptr<RunPublisher> publisher_;
  cost::Prices prices_;
  std::unique_ptr<metrics::MetricsServer> metrics_server_;
  std::unique_ptr<cost::CostMeter> meter_;
  std::unique_ptr<cost::CostReporter> cost_reporter_;
  std::unique_ptr<TrainerMetrics> trainer_metrics_;
  std::unique_ptr<RankMetrics> rank_metrics_;
  std::optional<metrics::Counter> bus_rejected_frames_, bus_handshake_failures_;
  std::unique_ptr<RunImages> images_;  // after the registry, the state and the seed source
};

}  // namespace

int run_train(const config::Config& c) {
  ServicesHooks hooks(c);
  return run_train(c, hooks);
}

int run_train(const config::Config& c, std::stop_token stop) {
  ServicesHooks hooks(c);
  return run_train(c, stop, hooks);
}

int run_validate(const config::Config& c) {
  ServicesHooks hooks(c);
  return run_validate(c, hooks);
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
  if (subcommand == "report") return run_report_command(args);
  if (subcommand == "page") return run_page_command(args);
  if (subcommand == "pretrain" || subcommand == "train" || subcommand == "eval" ||
      subcommand == "validate" || subcommand == "bench") {
    service::check_run_dir(c);  // before anything runs whose output would be lost
    ServicesHooks hooks(c);
    return run_subcommand(subcommand, c, hooks);
  }
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
