#include "tools/cluster/command_line.hpp"

#include <stdexcept>

#include "common/process/proc_stat.hpp"

namespace spotlight::cluster {

const char* const kUsage = R"(usage: spotlight-cluster [flags] [--config FILE] [--set KEY=VALUE]...

Runs one job on this machine as processes and waits for its trainer: redis-server (loopback, a
free port, AOF), spotlight-reward, spotlight-planner and N spotlight-explorer when
exploration.mode needs them (async, offload), and spotlight-trainer train. Then stops the rest
(SIGTERM, a grace period, SIGKILL) and writes <run.dir>/cluster.json: every process's role, pid,
CPU set, threads, exit status and CPU seconds. Logs: <run.dir>/logs/<process>.log. The exit
status is the trainer's.

Flags:
  --config FILE            the run's configuration (trainer, planner, explorers)
  --set KEY=VALUE          one run setting (repeatable); `spotlight-trainer --help` lists them
  --explorers N            explorers when the mode has them (default 2)
  --services auto|yes|no   start redis, reward, planner, explorers (auto: by exploration.mode)
  --trainer-cpus LIST      CPUs of the trainer, e.g. 0 (default: not pinned)
  --spot-cpus LIST         CPUs of explorers, planner, reward and redis, e.g. 1 (default: not pinned)
  --trainer-threads N      run.threads of the trainer (default: the number of --trainer-cpus)
  --trainer-ranks R        data-parallel trainer processes (sets trainer.ranks): trainer,
                           trainer-1 .. trainer-<R-1>, each pinned to its share of
                           --trainer-cpus (split evenly) with RANK, WORLD_SIZE, LOCAL_RANK,
                           MASTER_ADDR and MASTER_PORT set; --trainer-threads is per rank
  --trainer-restarts N     when a rank fails, stop the group and start it again (it resumes
                           from its checkpoint), at most N times (default 3; with R > 1)
  --explorer-threads N     run.threads of each explorer (default 1)
  --base FILE              base checkpoint (sets model.base)
  --base-cache DIR         base checkpoint of this recipe from DIR, pretrained there when missing
  --pretrain-cpus LIST     CPUs of that pretraining (default: not pinned, every core)
  --base-only              with --base-cache: print the base checkpoint's path, run nothing
  --bin-dir DIR            service binaries (default: ../../services from this program)
  --redis-server PATH      redis-server executable (default: from PATH)
  --manifest FILE          where to write the manifest (default <run.dir>/cluster.json)
  --grace-ms MS            SIGTERM grace before SIGKILL when stopping (default 10000)
  --drain-ms MS            how long planner and explorers may take to exit on their own after
                           the trainer finished the job (default 20000; no wait after a stop)
  --driver COMMAND         a benchmark's harness: a shell command started once the trainer runs
                           (process "driver", on the spot CPUs, stopped first); in COMMAND,
                           {service-args} becomes the services' --config/--set words (endpoints
                           included) and {redis-port} Redis's port
  --driver-stops-job       the job ends when the driver exits (the trainer is stopped)
  --after COMMAND          a shell command run (output on this program's) after the trainer has
                           ended and planner, explorers and driver have exited, while Redis still
                           runs: a benchmark's accounting. Same expansions as --driver
  --quiet                  do not echo the trainer's output
  -h, --help               this text
)";

namespace {

int to_int(const std::string& flag, const std::string& value, int min) {
  try {
    size_t used = 0;
    const int v = std::stoi(value, &used);
    if (used == value.size() && v >= min) return v;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument(flag + ": expected an integer >= " + std::to_string(min) + ", got '" +
                              value + "'");
}

std::vector<int> to_cpus(const std::string& flag, const std::string& value) {
  try {
    return process::parse_cpu_list(value);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(flag + ": " + e.what());
  }
}

}  // namespace

LauncherOptions parse_launcher_command_line(const std::vector<std::string>& args,
                                            const std::filesystem::path& program) {
  LauncherOptions o;
  o.cluster.bin_dir = std::filesystem::absolute(program).parent_path() / ".." / ".." / "services";
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::optional<std::string> inline_value;
    if (const auto eq = flag.find('='); flag.starts_with("--") && eq != std::string::npos) {
      inline_value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    }
    const auto value = [&]() -> std::string {
      if (inline_value) return *inline_value;
      if (i + 1 >= args.size()) throw std::invalid_argument(flag + ": needs a value");
      return args[++i];
    };
    if (flag == "-h" || flag == "--help") {
      o.help = true;
    } else if (flag == "--base-only") {
      o.base_only = true;
    } else if (flag == "--quiet") {
      o.quiet = true;
    } else if (flag == "--config") {
      if (o.cluster.run.file) throw std::invalid_argument("--config: given twice");
      o.cluster.run.file = std::filesystem::absolute(value());
    } else if (flag == "--set") {
      const std::string kv = value();
      if (kv.find('=') == std::string::npos) {
        throw std::invalid_argument("--set: expected KEY=VALUE, got '" + kv + "'");
      }
      o.cluster.run.overrides.push_back(kv);
    } else if (flag == "--explorers") {
      o.cluster.explorers = to_int(flag, value(), 0);
    } else if (flag == "--services") {
      const std::string v = value();
      if (v == "auto") {
        o.cluster.services.reset();
      } else if (v == "yes" || v == "no") {
        o.cluster.services = v == "yes";
      } else {
        throw std::invalid_argument("--services: expected auto, yes or no, got '" + v + "'");
      }
    } else if (flag == "--trainer-cpus") {
      o.cluster.trainer.cpus = to_cpus(flag, value());
    } else if (flag == "--spot-cpus") {
      o.cluster.spot.cpus = to_cpus(flag, value());
    } else if (flag == "--trainer-threads") {
      o.cluster.trainer.threads = to_int(flag, value(), 1);
    } else if (flag == "--trainer-ranks") {
      o.cluster.trainer_ranks = to_int(flag, value(), 1);
    } else if (flag == "--trainer-restarts") {
      o.cluster.trainer_restarts = to_int(flag, value(), 0);
    } else if (flag == "--explorer-threads") {
      o.cluster.explorer_threads = to_int(flag, value(), 1);
    } else if (flag == "--base") {
      o.base = std::filesystem::absolute(value());
    } else if (flag == "--base-cache") {
      o.base_cache = std::filesystem::absolute(value());
    } else if (flag == "--pretrain-cpus") {
      o.pretrain.cpus = to_cpus(flag, value());
    } else if (flag == "--bin-dir") {
      o.cluster.bin_dir = std::filesystem::absolute(value());
    } else if (flag == "--redis-server") {
      o.cluster.redis_server = value();
    } else if (flag == "--manifest") {
      o.cluster.manifest = std::filesystem::absolute(value());
    } else if (flag == "--grace-ms") {
      o.cluster.grace = std::chrono::milliseconds(to_int(flag, value(), 0));
    } else if (flag == "--drain-ms") {
      o.cluster.drain_timeout = std::chrono::milliseconds(to_int(flag, value(), 0));
    } else if (flag == "--driver") {
      o.driver = value();
    } else if (flag == "--driver-stops-job") {
      o.driver_stops_job = true;
    } else if (flag == "--after") {
      o.after = value();
    } else {
      throw std::invalid_argument("unknown argument '" + args[i] + "' (see --help)");
    }
  }
  if (o.base_only && !o.base_cache) throw std::invalid_argument("--base-only: needs --base-cache");
  if (o.base && o.base_cache) {
    throw std::invalid_argument("--base and --base-cache: give one of them");
  }
  if (o.driver_stops_job && o.driver.empty()) {
    throw std::invalid_argument("--driver-stops-job: needs --driver");
  }
  if (o.driver_stops_job) o.cluster.stop_with = "driver";
  return o;
}

std::string expand_command(std::string command, const std::vector<std::string>& service_args,
                           int redis_port) {
  std::string words;
  for (const auto& word : service_args) {
    std::string quoted = "'";
    for (char c : word)
      quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    words += (words.empty() ? "" : " ") + quoted + "'";
  }
  const auto replace_all = [&](const std::string& from, const std::string& to) {
    for (auto at = command.find(from); at != std::string::npos;
         at = command.find(from, at + to.size()))
      command.replace(at, from.size(), to);
  };
  replace_all("{service-args}", words);
  replace_all("{redis-port}", std::to_string(redis_port));
  return command;
}

}  // namespace spotlight::cluster
