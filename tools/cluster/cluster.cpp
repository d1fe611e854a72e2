#include "tools/cluster/cluster.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock/unix_time.hpp"
#include "common/log/log.hpp"
#include "common/redis/client.hpp"
#include "common/redis/errors.hpp"
#include "common/run/run_config.hpp"
#include "services/job/job_schema.hpp"
#include "tools/cluster/log_follower.hpp"

namespace spotlight::cluster {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
namespace fs = std::filesystem;

// A loopback TCP port that was free a moment ago (bind port 0 and read it back).
int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw ClusterError(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw ClusterError("bind 127.0.0.1:0: " + why);
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string tail_of(const fs::path& path, std::size_t bytes = 2000) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  const std::string all = s.str();
  return all.size() > bytes ? all.substr(all.size() - bytes) : all;
}

// True when a Redis at `probe` answers PING; false while it is not up yet, or answers -LOADING
// while it replays its AOF.
bool answers_ping(const redis::RedisOptions& probe) {
  try {
    redis::RedisClient(probe).ping();
    return true;
  } catch (const redis::RedisError&) {
    return false;
  }
}

}  // namespace

struct Cluster::Member {
  ProcessRecord record;
  std::optional<process::Process> process;
};

void ClusterOptions::validate() const {
  if (bin_dir.empty()) throw std::invalid_argument("ClusterOptions.bin_dir: must be set");
  if (explorers < 0) throw std::invalid_argument("ClusterOptions.explorers: must be >= 0");
  if (explorer_threads < 0) {
    throw std::invalid_argument("ClusterOptions.explorer_threads: must be >= 0");
  }
  if (trainer.threads < 0 || spot.threads < 0) {
    throw std::invalid_argument("ClusterOptions placement threads: must be >= 0");
  }
  if (trainer_ranks < 1 || trainer_restarts < 0) {
    throw std::invalid_argument("ClusterOptions.trainer_ranks/trainer_restarts: must be >= 1/0");
  }
  if (trainer_ranks > 1 && !trainer.cpus.empty() &&
      trainer.cpus.size() % static_cast<std::size_t>(trainer_ranks) != 0) {
    throw std::invalid_argument(
        "ClusterOptions.trainer.cpus: " + std::to_string(trainer.cpus.size()) +
        " CPUs do not split evenly "
        "over " +
        std::to_string(trainer_ranks) + " trainer ranks");
  }
  if (grace.count() < 0 || drain_timeout.count() < 0) {
    throw std::invalid_argument("ClusterOptions.grace/drain_timeout: must be >= 0");
  }
}

Cluster::Cluster(ClusterOptions options) : o_(std::move(options)) {
  o_.validate();
  const config::Config c = config::Config::load(job::run_schema(), o_.run);
  run_dir_ = fs::absolute(c.get_string("run.dir"));
  run_id_ = c.get_string("run.id");
  const run::ExplorationMode mode = run::exploration_options(c).mode;
  mode_ = run::to_string(mode);
  reward_kind_ = c.get_string("reward.kind");
  services_ = o_.services.value_or(run::needs_services(mode));
  if (o_.manifest.empty()) o_.manifest = run_dir_ / "cluster.json";
}

Cluster::~Cluster() {
  try {
    stop();
  } catch (const std::exception& e) {
    SPOTLIGHT_LOG(error) << "cluster: stopping failed: " << e.what();
  }
}

void Cluster::note(const std::string& line) const {
  if (o_.echo) *o_.echo << line << std::endl;
}

std::vector<std::string> Cluster::run_args() const {
  std::vector<std::string> args;
  if (o_.run.file) args.insert(args.end(), {"--config", o_.run.file->string()});
  for (const auto& s : o_.run.overrides)
    args.insert(args.end(), {"--set", s});
  if (services_) {
    args.insert(args.end(),
                {"--set", "redis.port=" + std::to_string(redis_port_), "--set",
                 "bus.trainer_endpoint=tcp://127.0.0.1:" + std::to_string(bus_port_), "--set",
                 "reward.endpoint=tcp://127.0.0.1:" + std::to_string(reward_port_)});
  }
  return args;
}

Cluster::Member& Cluster::launch(const std::string& name, const std::string& role,
                                 std::vector<std::string> argv, const Placement& placement,
                                 const std::map<std::string, std::string>& env) {
  auto member = std::make_unique<Member>();
  ProcessRecord& r = member->record;
  r.name = name;
  r.role = role;
  r.cpus = placement.cpus;
  r.threads = placement.threads;
  r.log = (run_dir_ / "logs" / (name + ".log")).string();
  process::ProcessOptions po;
  po.argv = std::move(argv);
  po.env = env_of(role);
  for (const auto& [key, value] : env)
    po.env[key] = value;
  po.cpus = placement.cpus;
  po.log = r.log;
  r.argv = po.argv;
  r.started_unix_ms = clock::unix_ms();
  member->process.emplace(std::move(po));
  r.pid = member->process->pid();
  r.cpus_allowed = member->process->allowed_cpus();
  members_.push_back(std::move(member));
  return *members_.back();
}

std::map<std::string, std::string> Cluster::env_of(const std::string& role) const {
  auto env = o_.env;
  if (const auto it = o_.role_env.find(role); it != o_.role_env.end()) {
    for (const auto& [key, value] : it->second)
      env[key] = value;
  }
  return env;
}

void Cluster::start_redis() {
  if (!services_) throw ClusterError("start_redis: the run has no services (exploration.mode)");
  if (redis_up_) return;
  if (started_unix_ms_ == 0) started_unix_ms_ = clock::unix_ms();
  const fs::path dir = run_dir_ / "redis";
  fs::create_directories(dir);
  constexpr int kPortAttempts = 8;
  for (int attempt = 1;; ++attempt) {
    redis_port_ = free_loopback_port();
    std::vector<std::string> argv = {o_.redis_server,
                                     "--port",
                                     std::to_string(redis_port_),
                                     "--bind",
                                     "127.0.0.1",
                                     "--dir",
                                     dir.string(),
                                     "--appendonly",
                                     "yes",
                                     "--appendfsync",
                                     o_.redis_appendfsync,
                                     "--save",
                                     "",
                                     "--protected-mode",
                                     "yes"};
    argv.insert(argv.end(), o_.redis_args.begin(), o_.redis_args.end());
    Member& m = launch("redis", "redis", std::move(argv), o_.spot);
    if (const auto s = await_redis(m)) {
      m.record.ended_unix_ms = clock::unix_ms();
      m.record.exit = *s;
      m.record.stopped_by = "exited";
      const std::string log = tail_of(m.record.log);
      if (log.find("Address already in use") != std::string::npos && attempt < kPortAttempts) {
        members_.pop_back();  // the port was taken meanwhile: try another
        continue;
      }
      throw ClusterError("redis-server exited at start (" + s->describe() + "):\n" + log);
    }
    redis_up_ = true;
    return;
  }
}

std::optional<process::ExitStatus> Cluster::await_redis(Member& m) {
  redis::RedisOptions probe;
  probe.port = redis_port_;
  if (o_.redis_user) probe.user = *o_.redis_user;
  probe.password = o_.redis_password;
  probe.connect_timeout = milliseconds(250);
  probe.command_timeout = milliseconds(1000);
  const auto deadline = Clock::now() + o_.redis_start_timeout;
  auto backoff = milliseconds(1);
  for (;;) {
    if (const auto s = m.process->wait_for(milliseconds(0))) return s;
    if (answers_ping(probe)) return std::nullopt;
    if (Clock::now() >= deadline) {
      throw ClusterError(
          "redis-server on port " + std::to_string(redis_port_) + " did not answer PING within " +
          std::to_string(o_.redis_start_timeout.count()) + " ms:\n" + tail_of(m.record.log));
    }
    std::this_thread::sleep_for(backoff);  // back-off between readiness probes
    backoff = std::min(backoff * 2, milliseconds(50));
  }
}

void Cluster::start() {
  if (started_unix_ms_ == 0) started_unix_ms_ = clock::unix_ms();
  fs::create_directories(run_dir_ / "logs");
  const fs::path services = o_.bin_dir;
  try {
    if (services_) {
      start_redis();
      reward_port_ = free_loopback_port();
      bus_port_ = free_loopback_port();
      Placement spot = o_.spot;
      spot.threads = 0;  // planner, reward and redis take no run.threads
      const std::string reward_endpoint = "tcp://127.0.0.1:" + std::to_string(reward_port_);
      // The service pays what the trainer pays (the run's reward.kind).
      std::vector<std::string> reward = {(services / "reward" / "spotlight-reward").string(),
                                         "--set", "reward.bind=" + reward_endpoint, "--set",
                                         "reward.kind=" + reward_kind_};
      if (!o_.reward_command.empty()) {
        reward = o_.reward_command;
        for (auto& word : reward) {
          for (auto at = word.find("{endpoint}"); at != std::string::npos;
               at = word.find("{endpoint}", at + reward_endpoint.size()))
            word.replace(at, std::string("{endpoint}").size(), reward_endpoint);
        }
      }
      launch("reward", "reward", std::move(reward), spot);
      auto planner = run_args();
      planner.insert(planner.begin(), (services / "planner" / "spotlight-planner").string());
      launch("planner", "planner", planner, spot);
      Placement explorer = o_.spot;
      explorer.threads = o_.explorer_threads;
      for (int i = 1; i <= o_.explorers; ++i) {
        auto argv = run_args();
        argv.insert(argv.begin(), (services / "explorer" / "spotlight-explorer").string());
        argv.insert(argv.end(), {"--set", "explorer.id=explorer-" + std::to_string(i)});
        if (explorer.threads > 0) {
          argv.insert(argv.end(), {"--set", "run.threads=" + std::to_string(explorer.threads)});
        }
        launch("explorer-" + std::to_string(i), "explorer", argv, explorer);
      }
      note("== services: redis-server :" + std::to_string(redis_port_) +
           ", reward :" + std::to_string(reward_port_) + ", planner, " +
           std::to_string(o_.explorers) + " explorers, trainer ==");
    }
    note("== GRPO post-training (exploration.mode=" + mode_ + ") in " + run_dir_.string() +
         (o_.trainer_ranks > 1 ? ", " + std::to_string(o_.trainer_ranks) + " trainer ranks" : "") +
         " ==");
    if (o_.trainer_ranks > 1) master_port_ = free_loopback_port();
    const auto names = trainer_names();
    for (int rank = 0; rank < o_.trainer_ranks; ++rank) {
      const Placement trainer = rank_placement(rank);
      auto argv = run_args();
      argv.insert(argv.begin(),
                  {(services / "trainer" / "spotlight-trainer").string(), o_.trainer_command});
      if (trainer.threads > 0) {
        argv.insert(argv.end(), {"--set", "run.threads=" + std::to_string(trainer.threads)});
      }
      if (o_.trainer_ranks > 1) {
        argv.insert(argv.end(), {"--set", "trainer.ranks=" + std::to_string(o_.trainer_ranks)});
      }
      launch(names[static_cast<std::size_t>(rank)], "trainer", argv, trainer,
             o_.trainer_ranks > 1 ? rank_env(rank) : std::map<std::string, std::string>{});
    }
  } catch (...) {
    stop();
    throw;
  }
}

std::vector<std::string> Cluster::trainer_names() const {
  std::vector<std::string> names{"trainer"};
  for (int rank = 1; rank < o_.trainer_ranks; ++rank)
    names.push_back("trainer-" + std::to_string(rank));
  return names;
}

std::map<std::string, std::string> Cluster::rank_env(int rank) const {
  return {{"RANK", std::to_string(rank)},
          {"LOCAL_RANK", std::to_string(rank)},
          {"WORLD_SIZE", std::to_string(o_.trainer_ranks)},
          {"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", std::to_string(master_port_)}};
}

Placement Cluster::rank_placement(int rank) const {
  Placement p = o_.trainer;
  if (o_.trainer_ranks > 1 && !p.cpus.empty()) {
    const std::size_t share = p.cpus.size() / static_cast<std::size_t>(o_.trainer_ranks);
    const auto first = p.cpus.begin() + static_cast<std::ptrdiff_t>(share * rank);
    p.cpus.assign(first, first + static_cast<std::ptrdiff_t>(share));
  }
  if (p.threads == 0) p.threads = static_cast<int>(p.cpus.size());
  return p;
}

process::ExitStatus Cluster::wait_trainer_group(std::stop_token stop) {
  std::vector<Member*> ranks;
  for (const auto& name : trainer_names()) {
    for (auto& m : members_) {
      if (m->record.name == name) ranks.push_back(m.get());
    }
  }
  if (ranks.size() != static_cast<std::size_t>(o_.trainer_ranks)) {
    throw ClusterError("wait_trainer: the trainer ranks were not started");
  }
  std::set<std::string> reported;
  LogFollower echo(ranks[0]->record.log, o_.echo);
  const auto stop_group = [&](const char* why) {
    for (Member* m : ranks) {
      if (!m->process->running()) {
        finish(*m, "exited");
        continue;
      }
      const auto r = m->process->terminate(o_.grace);
      finish(*m, r.escalated ? "sigkill" : why);
    }
  };
  for (;;) {
    // The period only paces the echo of the log and the look at the other ranks.
    ranks[0]->process->wait_for(o_.echo_period);
    echo.poll();
    bool all_ended = true;
    Member* failed = nullptr;
    for (Member* m : ranks) {
      const auto s = m->process->wait_for(milliseconds(0));  // reaps a rank that ended
      if (!s) {
        all_ended = false;
      } else if (!s->success() && failed == nullptr) {
        failed = m;
      }
    }
    bool stop_with_ended = false;
    for (auto& m : members_) {
      if (m->record.role == "trainer" || reported.count(m->record.name) || m->process->running())
        continue;
      reported.insert(m->record.name);
      if (m->record.name == o_.stop_with) stop_with_ended = true;
    }
    if (stop.stop_requested() || stop_with_ended) {
      note("== stopping the trainer group ==");
      stop_group("sigterm");
      echo.finish();
      return *ranks[0]->process->exit_status();
    }
    if (failed != nullptr) {
      const auto status = *failed->process->exit_status();
      note("== trainer group: " + failed->record.name + " failed (" + status.describe() +
           "); stopping the other ranks ==");
      stop_group("sigterm");
      if (trainer_group_restarts_ >= o_.trainer_restarts || status.code == 2) {
        echo.finish();
        return status;
      }
      ++trainer_group_restarts_;
      master_port_ = free_loopback_port();
      for (int rank = 0; rank < o_.trainer_ranks; ++rank)
        restart(ranks[static_cast<std::size_t>(rank)]->record.name, rank_env(rank));
      note("== trainer group restarted (" + std::to_string(trainer_group_restarts_) + " of " +
           std::to_string(o_.trainer_restarts) + "): it resumes from its newest checkpoint ==");
      continue;
    }
    if (all_ended) {
      echo.finish();
      for (Member* m : ranks)
        finish(*m, "exited");
      return *ranks[0]->process->exit_status();
    }
  }
}

process::ExitStatus Cluster::wait_trainer(std::stop_token stop) {
  if (o_.trainer_ranks > 1) return wait_trainer_group(stop);
  Member* trainer = nullptr;
  for (auto& m : members_) {
    if (m->record.name == "trainer") trainer = m.get();
  }
  if (!trainer) throw ClusterError("wait_trainer: the trainer was not started");
  std::set<std::string> reported;
  LogFollower echo(trainer->record.log, o_.echo);
  for (;;) {
    // The period only paces the echo of the log: the exit itself wakes the wait (pidfd).
    if (const auto s = trainer->process->wait_for(o_.echo_period)) {
      echo.finish();
      trainer->record.ended_unix_ms = clock::unix_ms();
      trainer->record.exit = *s;
      trainer->record.stopped_by = "exited";
      return *s;
    }
    echo.poll();
    bool stop_with_ended = false;
    for (auto& m : members_) {
      if (m.get() == trainer || reported.count(m->record.name) || m->process->running()) continue;
      reported.insert(m->record.name);
      if (m->record.name == o_.stop_with) {
        note("== " + m->record.name + " ended (" + m->process->exit_status()->describe() +
             "): stopping the job ==");
        stop_with_ended = true;
        continue;
      }
      // Planner and explorers exit 0 once they see the job finished, maybe just before we do.
      const bool job_done_exit = (m->record.role == "planner" || m->record.role == "explorer") &&
                                 m->process->exit_status()->success();
      if (job_done_exit) continue;
      SPOTLIGHT_LOG(warn) << "cluster: " << m->record.name << " exited while the trainer runs ("
                          << m->process->exit_status()->describe() << "); see " << m->record.log;
    }
    if (stop.stop_requested() || stop_with_ended) {
      if (!stop_with_ended)
        SPOTLIGHT_LOG(warn) << "cluster: stop requested: terminating the trainer";
      const auto r = trainer->process->terminate(o_.grace);
      echo.finish();
      trainer->record.ended_unix_ms = clock::unix_ms();
      trainer->record.exit = r.status;
      trainer->record.stopped_by = r.escalated ? "sigkill" : "sigterm";
      return r.status;
    }
  }
}

void Cluster::finish(Member& m, const char* how) {
  if (m.record.ended_unix_ms == 0) m.record.ended_unix_ms = clock::unix_ms();
  m.record.exit = m.process->exit_status();
  if (m.record.stopped_by == "running") m.record.stopped_by = how;
}

void Cluster::drain() {
  const auto deadline = Clock::now() + o_.drain_timeout;
  for (auto& m : members_) {
    if (m->record.role != "trainer") continue;
    if (m->process->running()) return;  // not ended yet
    // Planner and explorers exit by themselves only on a finished job: a trainer this cluster
    // stopped (a stop request, the stop_with process) or one that failed did not finish it.
    const auto status = m->process->exit_status();
    const bool stopped = m->record.stopped_by == "sigterm" || m->record.stopped_by == "sigkill";
    if (stopped || !status || !status->success()) return;
  }
  for (auto& m : members_) {
    const std::string& role = m->record.role;
    if (role != "planner" && role != "explorer" && role != "driver") continue;
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (m->process->wait_for(std::max(left, milliseconds(0)))) finish(*m, "exited");
  }
}

void Cluster::stop() {
  if (stopped_) return;
  stopped_ = true;
  // 1. Planner, explorers and drivers end by themselves once the trainer is done: give them the
  // time.
  drain();
  // 2. Everything left, newest first (trainer, explorers, planner, reward, redis).
  for (auto it = members_.rbegin(); it != members_.rend(); ++it) {
    Member& m = **it;
    if (!m.process->running()) {
      finish(m, "exited");
      continue;
    }
    const auto r = m.process->terminate(o_.grace);
    finish(m, r.escalated ? "sigkill" : "sigterm");
    if (r.escalated) {
      SPOTLIGHT_LOG(warn) << "cluster: " << m.record.name << " ignored SIGTERM for "
                          << o_.grace.count() << " ms: SIGKILLed";
    }
  }
}

process::Process* Cluster::process(const std::string& name) {
  for (auto& m : members_) {
    if (m->record.name == name) return &*m->process;
  }
  return nullptr;
}

std::string Cluster::log_tail(const std::string& name, std::size_t bytes) const {
  for (const auto& m : members_) {
    if (m->record.name == name) return tail_of(m->record.log, bytes);
  }
  return "";
}

process::Process& Cluster::add(const std::string& name, const std::string& role,
                               std::vector<std::string> argv) {
  if (process(name) != nullptr) throw ClusterError("add: a process called " + name + " exists");
  Placement spot = o_.spot;
  spot.threads = 0;
  return *launch(name, role, std::move(argv), spot).process;
}

process::Process& Cluster::restart(const std::string& name,
                                   const std::map<std::string, std::string>& env) {
  Member* member = nullptr;
  for (auto& m : members_) {
    if (m->record.name == name) member = m.get();
  }
  if (member == nullptr) throw ClusterError("restart: no process called " + name);
  if (member->process->running()) throw ClusterError("restart: " + name + " is still running");
  ProcessRecord& r = member->record;
  process::ProcessOptions po;
  po.argv = r.argv;
  po.env = env_of(r.role);
  for (const auto& [key, value] : env)
    po.env[key] = value;
  po.cpus = r.cpus;
  po.log = r.log;
  member->process.emplace(std::move(po));
  r.pid = member->process->pid();
  r.started_unix_ms = clock::unix_ms();
  r.ended_unix_ms = 0;
  r.exit.reset();
  r.stopped_by = "running";
  ++r.restarts;
  if (r.role == "redis") {
    if (const auto s = await_redis(*member)) {
      throw ClusterError("redis-server exited at restart (" + s->describe() + "):\n" +
                         tail_of(r.log));
    }
  }
  return *member->process;
}

Manifest Cluster::manifest() const {
  Manifest out;
  out.run_dir = run_dir_.string();
  out.run_id = run_id_;
  out.mode = mode_;
  out.services = services_;
  out.redis_port = redis_port_;
  out.reward_port = reward_port_;
  out.bus_port = bus_port_;
  out.started_unix_ms = started_unix_ms_;
  out.finished_unix_ms = clock::unix_ms();
  for (const auto& m : members_) {
    ProcessRecord r = m->record;
    r.cpu = m->process->cpu_times();
    if (!r.exit) r.exit = m->process->exit_status();
    out.processes.push_back(std::move(r));
  }
  return out;
}

fs::path Cluster::write_manifest() const {
  const fs::path tmp = o_.manifest.string() + ".tmp";
  fs::create_directories(o_.manifest.parent_path());
  std::ofstream(tmp) << manifest().to_json() << "\n";
  fs::rename(tmp, o_.manifest);
  return o_.manifest;
}

}  // namespace spotlight::cluster
