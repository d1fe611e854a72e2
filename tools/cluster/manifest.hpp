#pragma once
// What a local cluster ran: every process with its role, pid, command, CPU set (asked for and as
// the kernel reported it after the start), threads, exit status, how it was stopped and the CPU
// seconds it used. Written as JSON (schema version 1) beside the run:
//
//   {"version": 1, "run_dir": ..., "run_id": ..., "mode": "async", "services": true,
//    "started_unix_ms": ..., "finished_unix_ms": ..., "endpoints": {"redis_port": 6390, ...},
//    "processes": [{"name": "trainer", "role": "trainer", "pid": 4242, "argv": [...],
//                   "cpus": "0", "cpus_allowed": "0", "threads": 1, "log": "logs/trainer.log",
//                   "started_unix_ms": ..., "ended_unix_ms": ..., "exit": "exit 0",
//                   "exit_code": 0, "signal": 0, "stopped_by": "exited", "restarts": 0,
//                   "cpu_user_seconds": 51.2, "cpu_system_seconds": 0.8, "cpu_seconds": 52.0},
//                  ...]}
//
// stopped_by: "exited" (on its own), "sigterm" (stopped within the grace period), "sigkill"
// (escalated), "running" (still running when written). cpus "" means not pinned.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "common/process/process.hpp"

namespace spotlight::cluster {

inline constexpr int kManifestVersion = 1;

struct ProcessRecord {
  std::string name;  // trainer, planner, reward, redis, explorer-<i>, pretrain
  std::string role;  // trainer, planner, reward, redis, explorer, pretrain
  pid_t pid = -1;
  std::vector<std::string> argv;
  std::vector<int> cpus;          // asked for; empty: not pinned
  std::vector<int> cpus_allowed;  // sched_getaffinity right after the start
  int threads = 0;                // run.threads given (0: not set)
  std::string log;
  std::int64_t started_unix_ms = 0;
  std::int64_t ended_unix_ms = 0;  // 0 while running
  std::optional<process::ExitStatus> exit;
  std::string stopped_by = "running";
  int restarts = 0;  // Cluster::restart() calls: pid, times, exit and cpu are the last run's
  process::CpuTimes cpu;
};

struct Manifest {
  std::string run_dir;
  std::string run_id;
  std::string mode;
  bool services = false;
  int redis_port = 0, reward_port = 0, bus_port = 0;
  std::int64_t started_unix_ms = 0;
  std::int64_t finished_unix_ms = 0;
  std::vector<ProcessRecord> processes;

  std::string to_json() const;  // pretty-printed, as documented above
};

}  // namespace spotlight::cluster
