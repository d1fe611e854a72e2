#pragma once
// A run's processes on one machine (the local cluster): redis-server (loopback, a free port, AOF),
// spotlight-reward, spotlight-planner, N spotlight-explorer and spotlight-trainer, each role
// pinned to its CPU set with its thread count, all given the run's configuration.
//
//   ClusterOptions o;
//   o.bin_dir = "build/services";
//   o.run.file = "deploy/config/demo.yaml";
//   o.run.overrides = {"run.dir=runs/x", "exploration.mode=async"};
//   o.trainer.cpus = {0};                  // the reserved role
//   o.spot.cpus = {1};                     // explorers, planner, reward, redis
//   Cluster cluster(o);
//   cluster.start();                       // services (when the mode has them), then the trainer
//   cluster.wait_trainer(stop_token);      // echoing its output to o.echo
//   cluster.stop();                        // the rest: on their own, else SIGTERM, then SIGKILL
//   cluster.write_manifest();              // <run.dir>/cluster.json (manifest.hpp)
//
// Contract:
// - The run's configuration is validated (the services' run schema) in the constructor: a bad
//   key is a config::ConfigError before anything starts.
// - Which services run follows exploration.mode (run::needs_services()) unless `services` says.
// - Every process's output goes to <run.dir>/logs/<name>.log; names are trainer, planner,
//   reward, redis, explorer-1..N.
// - stop() first gives planner and explorers `drain_timeout` to exit by themselves (they do once
//   the trainer has finished the job; after a stop request or a failed trainer nobody waits),
//   then SIGTERMs everything left (explorers, planner, reward, redis: redis flushes its AOF) and
//   SIGKILLs what outlives `grace`. The destructor stops too.
// - Not thread-safe: one thread drives a Cluster (and must outlive its processes: they die with
//   it, PR_SET_PDEATHSIG).
// - The library is for the launcher binary (spotlight-cluster) and for end-to-end tests and
//   harnesses (the soak), which reach each process by name to signal it, restart() it after a
//   kill, or add() one more (a preemption driver with the explorer command: service_args()).
//   A test that must prepare Redis before any service sees it calls start_redis() first.

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <stop_token>
#include <string>
#include <vector>

#include "common/config/config.hpp"
#include "common/process/process.hpp"
#include "tools/cluster/manifest.hpp"

namespace spotlight::cluster {

inline constexpr std::chrono::milliseconds kDefaultRedisStartTimeout{15000};
inline constexpr std::chrono::milliseconds kDefaultDrainTimeout{20000};
inline constexpr std::chrono::milliseconds kDefaultStopGrace{10000};
inline constexpr std::chrono::milliseconds kDefaultEchoPeriod{100};

// A process of the cluster did not come up (redis not answering, a service exiting at start).
class ClusterError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Where a role runs.
struct Placement {
  std::vector<int> cpus;  // CPU set; empty: not pinned
  int threads = 0;        // run.threads; 0: the number of cpus (not set when unpinned)
};

struct ClusterOptions {
  std::filesystem::path bin_dir;  // <bin_dir>/<service>/spotlight-<service>
  config::ConfigSources run;      // --config / --set of trainer, planner and explorers
  std::optional<bool> services;   // redis + reward + planner + explorers; nullopt: by the mode
  int explorers = 2;
  Placement trainer;  // the reserved role: the trainer alone
  // Data-parallel trainer ranks (trainer.ranks): processes trainer (rank 0) and trainer-1 ..
  // trainer-<R-1>, each pinned to its share of trainer.cpus (split evenly, in order) with
  // trainer.threads each (0: the size of its share), and given RANK, WORLD_SIZE, LOCAL_RANK,
  // MASTER_ADDR (127.0.0.1) and MASTER_PORT (a free port). When a rank fails, wait_trainer()
  // stops the whole group and starts it again (it resumes from rank 0's newest checkpoint), up
  // to trainer_restarts times; a configuration error (exit 2) is not retried.
  int trainer_ranks = 1;
  int trainer_restarts = 3;
  Placement spot;            // the spot role: explorers, planner, reward, redis
  int explorer_threads = 1;  // run.threads of each explorer
  std::string trainer_command = "train";
  std::string redis_server = "redis-server";
  // Redis's appendfsync: "always" when a test counts on every acknowledged write surviving a
  // kill of the machine, not only of redis-server (which everysec already survives).
  std::string redis_appendfsync = "everysec";
  std::vector<std::string> redis_args;  // more redis-server arguments, e.g. {"--aclfile", PATH}
  // The user and password the readiness probe (PING) logs in as, for a Redis started with
  // requirepass or an ACL file in redis_args; nullopt: the default user without a password.
  std::optional<std::string> redis_user, redis_password;
  // The reward server's command instead of spotlight-reward's; every "{endpoint}" in a word is
  // replaced by the endpoint it must bind (tcp://127.0.0.1:<port>). Empty: spotlight-reward.
  std::vector<std::string> reward_command;
  std::map<std::string, std::string> env = {{"OMP_WAIT_POLICY", "passive"}};  // every process
  // More variables for the processes of one role (trainer, planner, explorer, reward, redis), set
  // over `env`: each service's Redis credentials, for instance.
  std::map<std::string, std::map<std::string, std::string>> role_env;
  // A process (by name, e.g. one add()ed as "driver") whose exit ends the job as a stop request
  // to wait_trainer() does: a harness that has measured what it came for. Empty: none.
  std::string stop_with;
  std::chrono::milliseconds redis_start_timeout = kDefaultRedisStartTimeout;
  std::chrono::milliseconds drain_timeout = kDefaultDrainTimeout;
  std::chrono::milliseconds grace = kDefaultStopGrace;
  std::chrono::milliseconds echo_period = kDefaultEchoPeriod;
  std::filesystem::path manifest;  // empty: <run.dir>/cluster.json
  std::ostream* echo = nullptr;    // the trainer's output and the launcher's notes; null: quiet

  void validate() const;  // std::invalid_argument naming the field
};

class Cluster {
 public:
  // Validates options and the run's configuration (config::ConfigError); starts nothing.
  explicit Cluster(ClusterOptions options);
  ~Cluster();  // stop() if not done
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // Starts the services (when the run has them; redis first, waiting until it answers PING),
  // then the trainer. Throws process::ProcessError or ClusterError; nothing is left running then.
  void start();
  // Starts redis-server alone and returns once it answers PING (redis_port() is then set), so
  // that a test can write into Redis before any service runs; start() then starts the rest.
  // Throws ClusterError when the run has no services, else as start(). Idempotent.
  void start_redis();
  // Waits for the trainer to exit, echoing its output; when `stop` is requested first the
  // trainer is terminated (SIGTERM, grace, SIGKILL). Returns its exit status. With trainer ranks,
  // waits for every rank (restarting the group after a failure, above) and returns rank 0's
  // status, or the failed rank's once the restarts are spent.
  process::ExitStatus wait_trainer(std::stop_token stop = {});
  // Gives planner, explorers and processes of role "driver" drain_timeout to exit by themselves
  // once the trainer has finished the job by itself (they exit then); returns at once when the
  // trainer was stopped or failed. stop() does this first. Use it to read what they recorded in
  // Redis before stop() ends Redis.
  void drain();
  // Stops every process left (see the contract). Idempotent.
  void stop();

  // The process called `name` (trainer, planner, reward, redis, explorer-<i>, or one added);
  // null if none.
  process::Process* process(const std::string& name);
  // Starts one more process called `name` (a new name) on the spot CPU set, output to
  // <run.dir>/logs/<name>.log, stopped by stop() before the others. Throws as start().
  process::Process& add(const std::string& name, const std::string& role,
                        std::vector<std::string> argv);
  // Starts the process called `name` again after it ended (a harness killed it): the same
  // command, CPU set and log (appended), `env` set over ClusterOptions::env. Redis comes back
  // on its port and directory (its AOF replayed) and this returns once it answers PING. Throws
  // ClusterError when there is no such process or it still runs, else as start().
  process::Process& restart(const std::string& name,
                            const std::map<std::string, std::string>& env = {});
  // The last `bytes` of the log of the process called `name` ("" when none).
  std::string log_tail(const std::string& name, std::size_t bytes = 4000) const;
  // The --config/--set words the run's services get (the run's sources, and with the services
  // the Redis, bus and reward endpoints): the command line of an explorer started elsewhere.
  std::vector<std::string> service_args() const { return run_args(); }
  const std::filesystem::path& run_dir() const { return run_dir_; }
  const std::string& mode() const { return mode_; }
  bool has_services() const { return services_; }
  int redis_port() const { return redis_port_; }
  // The names of the trainer's processes, rank order ({"trainer"} for one rank), and how often
  // wait_trainer() restarted the group.
  std::vector<std::string> trainer_names() const;
  int trainer_group_restarts() const { return trainer_group_restarts_; }

  // Every process so far with its CPU seconds and exit status (running ones: CPU so far).
  Manifest manifest() const;
  // Writes manifest() to options.manifest (default <run.dir>/cluster.json); returns the path.
  std::filesystem::path write_manifest() const;

 private:
  struct Member;
  Member& launch(const std::string& name, const std::string& role, std::vector<std::string> argv,
                 const Placement& placement, const std::map<std::string, std::string>& env = {});
  // Waits until redis `m` answers PING; its exit status if it exited first. Throws ClusterError
  // after redis_start_timeout.
  std::optional<process::ExitStatus> await_redis(Member& m);
  std::vector<std::string> run_args() const;
  // ClusterOptions::env with the role's role_env over it.
  std::map<std::string, std::string> env_of(const std::string& role) const;
  void note(const std::string& line) const;
  void finish(Member& m, const char* how);  // records how a process that ended was stopped
  process::ExitStatus wait_trainer_group(std::stop_token stop);
  // RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT of trainer rank `rank`.
  std::map<std::string, std::string> rank_env(int rank) const;
  Placement rank_placement(int rank) const;

  ClusterOptions o_;
  std::filesystem::path run_dir_;
  std::string run_id_;
  std::string mode_;
  std::string reward_kind_;  // the run's reward.kind, passed to the reward service
  bool services_ = false;
  int redis_port_ = 0, reward_port_ = 0, bus_port_ = 0;
  std::vector<std::unique_ptr<Member>> members_;
  std::int64_t started_unix_ms_ = 0;
  bool redis_up_ = false;  // start_redis() succeeded
  int master_port_ = 0;    // the trainer group's rendezvous (rank 0's TCPStore)
  int trainer_group_restarts_ = 0;
  bool stopped_ = false;
};

}  // namespace spotlight::cluster
