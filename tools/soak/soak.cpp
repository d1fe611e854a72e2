#include "tools/soak/soak.hpp"

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>
#include <signal.h>

#include "common/log/log.hpp"
#include "common/queue/redis_lease_queue.hpp"
#include "common/redis/client.hpp"
#include "common/run/run_config.hpp"
#include "common/run/run_keys.hpp"
#include "common/run/schedule.hpp"
#include "common/service/exit_codes.hpp"
#include "common/store/redis_key_value_store.hpp"
#include "services/job/job_schema.hpp"
#include "tools/cluster/cluster.hpp"

namespace spotlight::soak {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using Json = nlohmann::json;
namespace fs = std::filesystem;

constexpr milliseconds kPollPeriod{100};         // how often the harness looks at its processes
constexpr milliseconds kDrainTimeout{120000};    // planner and driver ending after the trainer
constexpr milliseconds kKillReapTimeout{30000};  // a SIGKILLed process gone
constexpr milliseconds kJobEndWait{30000};       // the trainer's exit after the job's end

enum class Fault { kRedisKill, kRedisPause, kTrainerKill };

// Redis kill, Redis pause, trainer kill, again, ... until each count is used up.
std::vector<Fault> interleave(const SoakOptions& o) {
  std::vector<Fault> out;
  int k = o.redis_kills, p = o.redis_pauses, t = o.trainer_kills;
  while (k + p + t > 0) {
    if (k-- > 0) out.push_back(Fault::kRedisKill);
    if (p-- > 0) out.push_back(Fault::kRedisPause);
    if (t-- > 0) out.push_back(Fault::kTrainerKill);
  }
  return out;
}

// The metrics.jsonl lines that parse (the last may be half-written while the trainer runs).
std::vector<Json> metric_lines(const fs::path& path) {
  std::ifstream in(path);
  std::vector<Json> out;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    Json j = Json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.contains("iteration")) out.push_back(std::move(j));
  }
  return out;
}

std::string text(double value) {
  std::ostringstream s;
  s << value;
  return s.str();
}

class Soak {
 public:
  Soak(const SoakOptions& o, std::stop_token stop)
      : o_(o),
        stop_(std::move(stop)),
        config_(config::Config::load(job::run_schema(), o.run)),
        cluster_(cluster_options(o)) {}

  SoakReport run() {
    const auto started = Clock::now();
    deadline_ = started + o_.job_timeout;
    metrics_ = cluster_.run_dir() / "metrics.jsonl";
    report_.iterations = config_.get_int("trainer.iterations");
    cluster_.start();
    cluster_.add("chaos", "chaos", chaos_argv());
    note("soak: started " + std::to_string(faults_.size()) + " faults over " +
         std::to_string(report_.iterations) + " iterations in " + cluster_.run_dir().string());
    std::size_t applied = 0;
    for (std::size_t f = 0; f < faults_.size(); ++f) {
      const auto at = static_cast<std::int64_t>(f + 1) * report_.iterations /
                      static_cast<std::int64_t>(faults_.size() + 1);
      if (!wait_for_iteration(at) || !apply(faults_[f])) break;
      ++applied;
    }
    if (report_.failures.empty()) finish_job();
    if (report_.failures.empty() && applied < faults_.size()) {
      fail("the job ended after " + std::to_string(applied) + " of " +
           std::to_string(faults_.size()) + " faults (more iterations, or fewer faults)");
    }
    if (trainer_done_) drain();
    if (!redis_killed_) {
      try {
        audit();
      } catch (const std::exception& e) {
        fail(std::string("audit: ") + e.what());
      }
    }
    cluster_.stop();
    cluster_.write_manifest();
    read_driver();
    count_redone();
    report_.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    check_counts();
    return report_;
  }

 private:
  static cluster::ClusterOptions cluster_options(const SoakOptions& o) {
    cluster::ClusterOptions c;
    c.bin_dir = o.bin_dir;
    c.run = o.run;
    c.services = true;
    c.explorers = 0;  // the driver starts them
    c.explorer_threads = o.explorer_threads;
    c.redis_appendfsync = "always";  // the audit counts on every acknowledged result
    c.echo = o.echo;
    return c;
  }

  std::vector<std::string> chaos_argv() const {
    const fs::path dir = cluster_.run_dir();
    std::vector<std::string> argv{o_.chaos_bin.string(),
                                  "--trace",
                                  o_.trace.string(),
                                  "--time-scale",
                                  text(o_.time_scale),
                                  "--max-explorers",
                                  std::to_string(o_.max_explorers),
                                  "--min-explorers",
                                  std::to_string(o_.min_explorers),
                                  "--kill-ratio",
                                  text(o_.kill_ratio),
                                  "--seed",
                                  std::to_string(o_.seed),
                                  "--start-tick",
                                  std::to_string(o_.start_tick),
                                  "--grace-seconds",
                                  text(o_.grace_seconds),
                                  "--loop",
                                  "--events",
                                  (dir / "chaos-events.jsonl").string(),
                                  "--summary",
                                  (dir / "chaos-summary.json").string(),
                                  "--log-dir",
                                  (dir / "logs" / "explorers").string(),
                                  "--",
                                  (o_.bin_dir / "explorer" / "spotlight-explorer").string()};
    for (auto& word : cluster_.service_args())
      argv.push_back(std::move(word));
    argv.insert(argv.end(), {"--set", "explorer.id=chaos-{n}", "--set",
                             "run.threads=" + std::to_string(o_.explorer_threads)});
    return argv;
  }

  void note(const std::string& line) const {
    if (o_.echo) *o_.echo << line << std::endl;
  }

  void fail(const std::string& why) {
    report_.failures.push_back(why);
    note("soak: FAILED: " + why);
  }

  process::Process& member(const std::string& name) {
    process::Process* p = cluster_.process(name);
    if (p == nullptr) throw std::logic_error("soak: no process " + name);
    return *p;
  }

  // Every process but the trainer still runs (Redis unless the soak killed it): else a failure.
  bool others_alive() {
    for (const char* name : {"redis", "reward", "planner", "chaos"}) {
      if (redis_killed_ && std::string(name) == "redis") continue;
      process::Process& p = member(name);
      if (p.running()) continue;
      // Planner and driver end by themselves once the job is over, which they can see just
      // before the trainer's process ends: then it is the end, not a failure.
      if (std::string(name) != "redis" && std::string(name) != "reward" &&
          p.exit_status()->success()) {
        const auto t = member("trainer").wait_for(kJobEndWait);
        if (t && t->success()) {
          trainer_done_ = true;
          return false;
        }
      }
      fail(std::string(name) + " exited on its own while the job ran (" +
           p.exit_status()->describe() + "); see its log under " +
           (cluster_.run_dir() / "logs").string());
      return false;
    }
    return true;
  }

  // False once the trainer has exited: 0 is the job's end (trainer_done_), anything else a
  // failure.
  bool trainer_alive() {
    process::Process& t = member("trainer");
    if (t.running()) return true;
    if (t.exit_status()->success()) {
      trainer_done_ = true;
    } else {
      fail("the trainer exited on its own (" + t.exit_status()->describe() + ")");
    }
    return false;
  }

  // False (a failure recorded) on a stop request, past the job timeout or as others_alive().
  bool watch_others() {
    if (stop_.stop_requested()) {
      fail("stopped");
      return false;
    }
    if (Clock::now() > deadline_) {
      fail("the job did not finish within " + std::to_string(o_.job_timeout.count()) + " ms");
      return false;
    }
    return others_alive();
  }

  // One period of watching: false when the soak must stop looking.
  bool watch() { return watch_others() && trainer_alive(); }

  // Watches for `length` (a fault's duration, not a synchronisation): false as watch().
  bool hold(milliseconds length) {
    const auto until = Clock::now() + length;
    while (Clock::now() < until) {
      if (!watch()) return false;
      const auto left = std::chrono::duration_cast<milliseconds>(until - Clock::now());
      member("trainer").wait_for(std::clamp(left, milliseconds(0), kPollPeriod));
    }
    return true;
  }

  std::int64_t last_iteration() const {
    const auto lines = metric_lines(metrics_);
    return lines.empty() ? -2 : lines.back().at("iteration").get<std::int64_t>();
  }

  bool wait_for_iteration(std::int64_t iteration) {
    while (last_iteration() < iteration) {
      if (!watch()) return false;
      member("trainer").wait_for(kPollPeriod);  // wakes at once when it exits
    }
    return true;
  }

  // Restarts the trainer, noting the last iteration it recorded (what it trains again is the
  // part after its checkpoint: see count_redone()).
  process::Process& restart_trainer(const std::map<std::string, std::string>& env = {}) {
    recorded_before_restart_.push_back(last_iteration());
    return cluster_.restart("trainer", env);
  }

  // Iterations trained again after restarts: per restart, those recorded before it from the
  // iteration its log says it resumed at ("resumed from checkpoint: next iteration N").
  void count_redone() {
    const std::string marker = "resumed from checkpoint: next iteration ";
    std::ifstream log(cluster_.run_dir() / "logs" / "trainer.log");
    std::vector<std::int64_t> resumed;
    for (std::string line; std::getline(log, line);) {
      const auto at = line.find(marker);
      if (at != std::string::npos) resumed.push_back(std::stoll(line.substr(at + marker.size())));
    }
    report_.trainer_restarts = static_cast<std::int64_t>(recorded_before_restart_.size());
    if (resumed.size() != recorded_before_restart_.size()) {
      fail("the trainer resumed " + std::to_string(resumed.size()) + " times after " +
           std::to_string(recorded_before_restart_.size()) + " restarts");
      return;
    }
    for (std::size_t i = 0; i < resumed.size(); ++i)
      report_.iterations_redone +=
          std::max<std::int64_t>(0, recorded_before_restart_[i] + 1 - resumed[i]);
  }

  void kill(const std::string& name) {
    process::Process& p = member(name);
    p.signal(SIGKILL);
    if (!p.wait_for(kKillReapTimeout)) throw std::runtime_error(name + " survived SIGKILL");
  }

  bool apply(Fault fault) {
    const std::int64_t at = last_iteration();
    switch (fault) {
      case Fault::kRedisKill: {
        kill("redis");
        redis_killed_ = true;
        ++report_.redis_kills;
        note("soak: iteration " + std::to_string(at) + ": redis-server SIGKILLed (" +
             std::to_string(report_.redis_kills) + ")");
        const bool held = hold(o_.redis_down);
        cluster_.restart("redis");  // also when the soak stops: the audit needs it
        redis_killed_ = false;
        return held;
      }
      case Fault::kRedisPause: {
        member("redis").signal(SIGSTOP);
        ++report_.redis_pauses;
        note("soak: iteration " + std::to_string(at) + ": redis-server SIGSTOPped (" +
             std::to_string(report_.redis_pauses) + ")");
        const bool held = hold(o_.redis_pause);
        member("redis").signal(SIGCONT);
        return held;
      }
      case Fault::kTrainerKill: {
        kill("trainer");
        ++report_.trainer_kills;
        const bool disk_full = report_.trainer_kills <= o_.disk_full;
        note("soak: iteration " + std::to_string(at) + ": trainer SIGKILLed (" +
             std::to_string(report_.trainer_kills) + ")" +
             (disk_full ? ", restarted with a full disk under its checkpoints" : ", restarted"));
        if (!disk_full) {
          restart_trainer();
          return true;
        }
        return disk_full_episode();
      }
    }
    return false;
  }

  // The trainer restarted on a full disk must exit 6 at its next checkpoint; then it gets room.
  bool disk_full_episode() {
    const fs::path checkpoints = cluster_.run_dir() / "checkpoints";
    process::Process& t = restart_trainer({{"LD_PRELOAD", o_.fault_shim.string()},
                                           {"SPOTLIGHT_FAULT_PREFIX", checkpoints.string()},
                                           {"SPOTLIGHT_FAULT_AT", "1"},
                                           {"SPOTLIGHT_FAULT_STICKY", "1"},
                                           {"SPOTLIGHT_FAULT_ERRNO", std::to_string(ENOSPC)}});
    while (t.running()) {
      if (!watch_others()) return false;
      t.wait_for(kPollPeriod);
    }
    const process::ExitStatus s = *t.exit_status();
    if (s.code != service::kExitStorage || !s.exited()) {
      fail("disk full: the trainer ended with " + s.describe() + ", not exit " +
           std::to_string(service::kExitStorage));
      return false;
    }
    ++report_.disk_full;
    note("soak: iteration " + std::to_string(last_iteration()) +
         ": the trainer exited 6 on the full disk; restarted with room");
    restart_trainer();
    return true;
  }

  void finish_job() {
    while (watch()) {
      member("trainer").wait_for(kPollPeriod);
    }
  }

  // Planner and driver end by themselves once the trainer is done (the driver when an explorer
  // exits 0 on its own).
  void drain() {
    for (const char* name : {"planner", "chaos"}) {
      process::Process& p = member(name);
      const auto s = p.wait_for(kDrainTimeout);
      if (!s) {
        note(std::string("soak: ") + name + " still running " +
             std::to_string(kDrainTimeout.count()) + " ms after the job: stopped");
      } else if (!s->success()) {
        fail(std::string(name) + " ended with " + s->describe() + " after the job");
      }
    }
  }

  void audit() {
    redis::RedisOptions ro = run::redis_options(config_);
    ro.port = cluster_.redis_port();
    queue::RedisLeaseQueue queue(ro, run::explore_queue_options(config_));
    const queue::QueueStats stats = queue.stats();
    std::set<std::string> results;
    queue.for_each_result([&](std::string_view id, std::string_view) { results.emplace(id); });
    const auto prompts = static_cast<int>(config_.get_int("trainer.prompts_per_iteration"));
    const auto candidates = static_cast<int>(config_.get_int("exploration.candidates"));
    std::set<std::string> scheduled;
    for (std::int64_t k = 0; k < report_.iterations; ++k) {
      for (int i = 0; i < prompts; ++i) {
        for (int j = 0; j < candidates; ++j)
          scheduled.insert(run::seed_task_id(k, i, j));
      }
    }
    report_.tasks_scheduled = static_cast<std::int64_t>(scheduled.size());
    report_.results = static_cast<std::int64_t>(results.size());
    report_.acked = stats.acked_total;
    for (const auto& id : scheduled)
      report_.tasks_lost += results.count(id) ? 0 : 1;
    for (const auto& id : results)
      report_.unscheduled_results += scheduled.count(id) ? 0 : 1;
    report_.double_counted = stats.acked_total - stats.results;
    report_.duplicate_runs = stats.duplicate_results_total;
    report_.reclaimed = stats.reclaimed_total;
    report_.dead_lettered = stats.dead_lettered_total;
    report_.leased_at_end = stats.leased;

    const run::RunKeys keys(config_.get_string("run.id"));
    store::RedisKeyValueStore kv(ro, keys.prefix);
    report_.sample_steps = kv.counter(keys.sample_steps);
    report_.resumed_steps = kv.counter(keys.resumed_steps);
    const std::int64_t steps = config_.get_int("exploration.steps") > 0
                                   ? config_.get_int("exploration.steps")
                                   : config_.get_int("sampler.steps");
    report_.sample_steps_needed = report_.tasks_scheduled * steps;
    report_.redone_steps = report_.sample_steps - report_.sample_steps_needed;

    std::vector<std::int64_t> trained, expected{-1};
    for (const auto& line : metric_lines(metrics_)) {
      trained.push_back(line.at("iteration").get<std::int64_t>());
      report_.fallback_prompts += line.value("fallback_prompts", 0);
    }
    for (std::int64_t k = 0; k < report_.iterations; ++k)
      expected.push_back(k);
    report_.iterations_trained_once = trained == expected;
  }

  void read_driver() {
    const fs::path dir = cluster_.run_dir();
    std::ifstream summary_file(dir / "chaos-summary.json");
    const Json summary = Json::parse(summary_file, nullptr, false);
    if (summary.is_discarded()) {
      fail("no driver summary in " + (dir / "chaos-summary.json").string());
      return;
    }
    report_.explorer_starts = summary.value("starts", 0);
    report_.preempt_term = summary.value("terms", 0);
    report_.preempt_kill = summary.value("kills", 0);
    report_.escalated = summary.value("escalated", 0);
    report_.max_burst = summary.value("max_burst", 0);
    report_.explorer_failed_exits = summary.value("failed_exits", 0);
    const std::int64_t half = std::max(2, (o_.max_explorers + 1) / 2);
    std::set<std::int64_t> ticks;
    std::ifstream events(dir / "chaos-events.jsonl");
    for (std::string line; std::getline(events, line);) {
      const Json e = Json::parse(line, nullptr, false);
      if (e.is_discarded()) continue;
      const std::string kind = e.value("event", "");
      if ((kind == "term" || kind == "kill") && e.value("burst", 0) >= half) {
        ticks.insert(e.value("tick", std::int64_t{-1}));
      }
    }
    report_.half_pool_bursts = static_cast<std::int64_t>(ticks.size());
  }

  void check_counts() {
    const auto expect_zero = [&](std::int64_t value, const std::string& what) {
      if (value != 0) fail(std::to_string(value) + " " + what);
    };
    if (report_.tasks_scheduled == 0) return;  // no audit: already failed
    expect_zero(report_.tasks_lost, "tasks lost (scheduled, no result)");
    expect_zero(report_.double_counted, "results double-counted (acknowledged beyond once)");
    expect_zero(report_.unscheduled_results, "results for tasks never scheduled");
    expect_zero(report_.leased_at_end, "tasks still leased at the end");
    expect_zero(report_.dead_lettered, "tasks dead-lettered");
    expect_zero(report_.fallback_prompts, "prompts fell back to random seeds");
    expect_zero(report_.explorer_failed_exits, "explorers exited non-zero on their own");
    if (!report_.iterations_trained_once) {
      fail("metrics.jsonl is not iterations -1, 0, ..., K-1 each once");
    }
    const std::int64_t preemptions = report_.preempt_term + report_.preempt_kill;
    if (preemptions < o_.min_preemptions) {
      fail(std::to_string(preemptions) + " preemptions, fewer than " +
           std::to_string(o_.min_preemptions));
    }
  }

  const SoakOptions& o_;
  std::stop_token stop_;
  config::Config config_;
  cluster::Cluster cluster_;
  std::vector<Fault> faults_ = interleave(o_);
  SoakReport report_;
  fs::path metrics_;
  Clock::time_point deadline_{};
  std::vector<std::int64_t> recorded_before_restart_;
  bool redis_killed_ = false;
  bool trainer_done_ = false;
};

}  // namespace

void SoakOptions::validate() const {
  if (bin_dir.empty()) throw std::invalid_argument("SoakOptions.bin_dir: must be set");
  if (chaos_bin.empty()) throw std::invalid_argument("SoakOptions.chaos_bin: must be set");
  if (trace.empty()) throw std::invalid_argument("SoakOptions.trace: must be set");
  if (redis_kills < 0 || redis_pauses < 0 || trainer_kills < 0 || disk_full < 0) {
    throw std::invalid_argument("SoakOptions fault counts: must be >= 0");
  }
  if (disk_full > trainer_kills) {
    throw std::invalid_argument(
        "SoakOptions.disk_full: a disk-full episode follows a trainer kill (<= trainer_kills)");
  }
  if (disk_full > 0 && fault_shim.empty()) {
    throw std::invalid_argument("SoakOptions.fault_shim: needed for disk_full");
  }
  if (redis_down.count() < 0 || redis_pause.count() < 0 || job_timeout.count() <= 0) {
    throw std::invalid_argument("SoakOptions durations: must be >= 0 (job_timeout > 0)");
  }
}

std::string SoakReport::to_json() const {
  const Json out{{"seconds", seconds},
                 {"preemptions",
                  {{"total", preempt_term + preempt_kill},
                   {"sigterm", preempt_term},
                   {"sigkill", preempt_kill},
                   {"escalated", escalated},
                   {"max_burst", max_burst},
                   {"half_pool_bursts", half_pool_bursts},
                   {"explorer_starts", explorer_starts},
                   {"explorer_failed_exits", explorer_failed_exits}}},
                 {"faults",
                  {{"redis_kills", redis_kills},
                   {"redis_pauses", redis_pauses},
                   {"trainer_kills", trainer_kills},
                   {"disk_full", disk_full},
                   {"trainer_restarts", trainer_restarts},
                   {"iterations_redone", iterations_redone}}},
                 {"audit",
                  {{"iterations", iterations},
                   {"iterations_trained_once", iterations_trained_once},
                   {"tasks_scheduled", tasks_scheduled},
                   {"results", results},
                   {"acked", acked},
                   {"tasks_lost", tasks_lost},
                   {"double_counted", double_counted},
                   {"unscheduled_results", unscheduled_results},
                   {"duplicate_runs", duplicate_runs},
                   {"reclaimed", reclaimed},
                   {"dead_lettered", dead_lettered},
                   {"leased_at_end", leased_at_end},
                   {"fallback_prompts", fallback_prompts},
                   {"sample_steps", sample_steps},
                   {"sample_steps_needed", sample_steps_needed},
                   {"redone_steps", redone_steps},
                   {"resumed_steps", resumed_steps}}},
                 {"ok", ok()},
                 {"failures", failures}};
  return out.dump();
}

SoakReport run_soak(const SoakOptions& options, std::stop_token stop) {
  options.validate();
  Soak soak(options, std::move(stop));
  return soak.run();
}

}  // namespace spotlight::soak
