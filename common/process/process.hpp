#pragma once
// A child process: spawn with argv / environment / working directory / log file / CPU set,
// signal, wait with a timeout, terminate (SIGTERM, a grace period, then SIGKILL), and read the
// CPU seconds it used.
//
//   process::ProcessOptions o;
//   o.argv = {"redis-server", "--port", "6380"};   // argv[0] without '/' is looked up in PATH
//   o.log = run_dir / "logs/redis.log";            // stdout + stderr appended
//   o.cpus = {1};                                  // pinned before exec
//   process::Process redis(o);                     // returns once exec succeeded, else throws
//   ...
//   const process::StopResult r = redis.terminate(std::chrono::seconds(10));
//   log::info("redis: {}, {} CPU s", r.status.describe(), redis.cpu_times().total());
//
//   o.pipe_stdin = o.pipe_stdout = true;          // a line protocol on stdin/stdout instead
//   process::Process worker(o);                   // write worker.input_fd(); read lines with
//   process::LineReader lines(worker.output_fd()); // line_reader.hpp
//
// Contract:
// - The constructor returns after the child has exec'd the program; every failure before that
//   (program not found, working directory, log file, CPU set) is a ProcessError naming the
//   program and the cause, and leaves no child behind.
// - In the child, before exec: the CPU affinity is set (sched_setaffinity), signal dispositions
//   and the signal mask are reset to defaults, every descriptor but 0-2 is closed, stdin is
//   /dev/null unless piped. With die_with_parent the child gets SIGKILL when the *thread* that
//   spawned it exits (PR_SET_PDEATHSIG): spawn from a thread that outlives the child.
// - A Process still running when destroyed is SIGKILLed and reaped: no zombies, no orphans.
// - cpu_times() is utime + stime of the child plus its waited-for descendants: read from
//   /proc/<pid>/stat while it runs, and from the rusage of wait4() once it has been reaped (so it
//   is still there after exit).
// - Pipes are Unix stream sockets the Process owns (closed when it is destroyed): writing to a
//   child that has closed its end is an error (EPIPE with send(MSG_NOSIGNAL)), never SIGPIPE.
// - Not thread-safe: one thread drives a Process. Signals go through a pidfd, so a reaped
//   child's recycled pid is never signalled.

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/types.h>

#include "common/process/proc_stat.hpp"

namespace spotlight::process {

inline constexpr std::chrono::milliseconds kDefaultGrace{10000};

class ProcessError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ProcessOptions {
  std::vector<std::string> argv;           // argv[0]: the program (PATH lookup when no '/')
  std::map<std::string, std::string> env;  // set in the child, over the inherited environment
  bool inherit_env = true;                 // false: the child sees only `env`
  std::filesystem::path working_dir;       // empty: the parent's
  std::filesystem::path log;               // stdout and stderr appended here; empty: inherited
  bool pipe_stdin = false;   // stdin: a pipe the parent writes through input_fd(); else /dev/null
  bool pipe_stdout = false;  // stdout: a pipe the parent reads through output_fd(); else `log`
  bool pipe_stderr = false;  // stderr: into stdout's pipe (needs pipe_stdout); else `log`
  std::vector<int> cpus;     // CPUs the child may run on; empty: the parent's set
  bool die_with_parent = true;  // PR_SET_PDEATHSIG(SIGKILL)

  void validate() const;  // std::invalid_argument naming the field
};

struct ExitStatus {
  int code = 0;    // exit code, when it exited
  int signal = 0;  // the signal that ended it; 0 when it exited

  bool exited() const { return signal == 0; }
  bool success() const { return signal == 0 && code == 0; }
  int shell_code() const { return signal != 0 ? 128 + signal : code; }  // as $? in a shell
  std::string describe() const;                                         // "exit 3", "SIGKILL"
};

// How terminate() ended a process.
struct StopResult {
  ExitStatus status;
  bool escalated = false;  // still running after the grace period: SIGKILLed
};

class Process {
 public:
  explicit Process(ProcessOptions options);
  ~Process();
  Process(Process&& other) noexcept;
  Process& operator=(Process&& other) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  const ProcessOptions& options() const { return options_; }
  // The parent's ends of the pipes (ProcessOptions::pipe_*); -1 when not piped or closed.
  int input_fd() const { return input_fd_; }
  int output_fd() const { return output_fd_; }
  // Closes the child's stdin (it reads end of file). Idempotent.
  void close_input();

  // Reaps the child if it has exited (no wait); true while it runs.
  bool running();
  // The exit status once it has exited within `timeout`; nullopt while it still runs.
  std::optional<ExitStatus> wait_for(std::chrono::milliseconds timeout);
  ExitStatus wait();
  // The status if it has been reaped.
  const std::optional<ExitStatus>& exit_status() const { return status_; }

  // Sends `signal_number`; does nothing once the child has been reaped.
  void signal(int signal_number);
  // SIGTERM, wait up to `grace`, then SIGKILL and wait. Returns at once if already exited.
  StopResult terminate(std::chrono::milliseconds grace = kDefaultGrace);

  // CPU seconds of the child and its waited-for descendants (see the contract above). Zero when
  // /proc cannot be read.
  CpuTimes cpu_times() const;
  // The CPUs the kernel lets the child run on now (sched_getaffinity); empty once reaped.
  std::vector<int> allowed_cpus() const;

 private:
  void reap(int status, CpuTimes times);  // records how it ended
  void release();                         // kill and reap a running child, close the descriptors

  ProcessOptions options_;
  pid_t pid_ = -1;
  int pidfd_ = -1;
  int input_fd_ = -1;
  int output_fd_ = -1;
  std::optional<ExitStatus> status_;
  CpuTimes final_times_;
};

}  // namespace spotlight::process
