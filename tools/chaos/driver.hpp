#pragma once
// Driver: replays a ChaosSchedule with real processes (issue #4, the preemption driver).
//
//   run(stop):
//     for tick = start_tick, start_tick + 1, ... (ticks of trace.gap_seconds / time_scale;
//                                                 wraps around when loop, else ends with the trace)
//       reap exited children                 (event "exit"; a child that exits 0 without being
//                                             signalled means the job is over: the drive ends
//                                             when stop_on_clean_exit)
//       for each action of schedule.plan(tick, running):
//         start: spawn command ("{n}" -> the process serial; common/process: it dies with the
//                driver's thread), output to log_dir/proc-<n>.log
//         term:  SIGTERM; counted as gone at once; SIGKILL ("escalate") if still alive after
//                grace + escalation_slack
//         kill:  SIGKILL
//       wait until the next tick (reaping meanwhile), or stop
//     then: SIGTERM every child, SIGKILL what is left after grace + escalation_slack, reap all
//
// Every event is one JSON line in `events` (t = seconds since run() began, unix_ms, tick,
// event = start|term|kill|escalate|exit, serial, pid, status for exit, burst = preemptions in
// that tick). Not thread-safe; one Driver per process (it reaps its own children only).

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include <sys/types.h>

#include "common/process/process.hpp"
#include "tools/chaos/chaos_schedule.hpp"

namespace spotlight::chaos {

inline constexpr std::chrono::milliseconds kDefaultChaosGrace{30000};
inline constexpr std::chrono::milliseconds kDefaultEscalationSlack{5000};
inline constexpr std::chrono::milliseconds kDefaultReapInterval{20};

struct DriverOptions {
  std::vector<std::string> command;  // argv of one process; "{n}" is replaced by its serial
  double time_scale = 1.0;           // trace seconds per real second, > 0
  std::size_t start_tick = 0;
  std::optional<std::size_t> max_ticks;  // stop after this many ticks
  bool loop = false;                     // wrap around at the end of the trace
  bool stop_on_clean_exit = true;        // a child exiting 0 unsignalled ends the drive
  std::chrono::milliseconds grace = kDefaultChaosGrace;  // what a SIGTERM'd process is given
  std::chrono::milliseconds escalation_slack = kDefaultEscalationSlack;
  std::chrono::milliseconds reap_interval = kDefaultReapInterval;
  std::filesystem::path events;   // JSONL event log; empty: none
  std::filesystem::path log_dir;  // children's output; empty: inherited

  void validate() const;  // std::invalid_argument naming the field
};

struct DriverSummary {
  std::int64_t ticks = 0;
  std::int64_t starts = 0;
  std::int64_t terms = 0;              // SIGTERM preemptions
  std::int64_t kills = 0;              // SIGKILL preemptions
  std::int64_t escalated = 0;          // SIGTERM'd processes still alive after grace: SIGKILL'd
  std::int64_t clean_exits = 0;        // exited 0 without a signal from the driver
  std::int64_t failed_exits = 0;       // exited non-zero without a signal from the driver
  std::int64_t term_exit_nonzero = 0;  // SIGTERM'd processes that did not exit 0 by themselves
  std::int64_t max_burst = 0;          // most preemptions in one tick
  double seconds = 0;

  std::string to_json() const;
};

class Driver {
 public:
  Driver(ChaosSchedule schedule, DriverOptions options);
  ~Driver() = default;  // a child left (only if run() threw) is killed and reaped
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  DriverSummary run(std::stop_token stop);

 private:
  using Clock = std::chrono::steady_clock;
  struct Child {
    std::int64_t serial = 0;
    pid_t pid = -1;
    std::optional<process::Process> process;
    bool terminating = false;  // SIGTERM'd (not counted as running)
    bool signalled = false;    // the driver signalled it (term, kill or escalate)
    Clock::time_point term_at{};
  };

  void start(std::size_t tick);
  void preempt(const Action& action, std::size_t tick, std::int64_t burst);
  // Reaps exited children and escalates overdue SIGTERMs; true when a child exited cleanly on
  // its own (and stop_on_clean_exit).
  bool reap(std::size_t tick);
  void shutdown(std::size_t tick);
  std::vector<std::int64_t> running() const;
  void event(const std::string& kind, std::size_t tick, const Child& child,
             const std::string& extra = "");

  ChaosSchedule schedule_;
  DriverOptions options_;
  std::map<std::int64_t, Child> children_;  // serial -> child
  std::int64_t next_serial_ = 0;
  DriverSummary summary_;
  std::ofstream events_;
  Clock::time_point started_{};
};

}  // namespace spotlight::chaos
