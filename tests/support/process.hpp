#pragma once
// Child processes for end-to-end tests: spawn a service binary with arguments, its stdout and
// stderr appended to a log file, signal it (SIGTERM, SIGKILL) and wait for it with a timeout.
// A Process still running when destroyed is killed (SIGKILL) and reaped. A thin layer over
// common/process (process::Process) with the exit status as one number, as tests compare it.

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "common/process/process.hpp"

namespace spotlight::testing {

class Process {
 public:
  // Starts `binary` with `args` (argv[1..]); throws std::runtime_error if it cannot be started.
  Process(const std::filesystem::path& binary, const std::vector<std::string>& args,
          const std::filesystem::path& log);
  // With `options` (argv, environment, CPU set, ...); its log is options.log.
  explicit Process(process::ProcessOptions options);
  Process(Process&& other) noexcept = default;
  Process& operator=(Process&&) = delete;
  Process(const Process&) = delete;

  pid_t pid() const { return process_.pid(); }
  void signal(int signal_number);
  // The exit status (exit code, or 128 + signal for a signalled process) once it has exited
  // within `timeout`; nullopt while it still runs.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  bool running();
  std::string log_tail(size_t bytes = 4000) const;
  process::Process& process() { return process_; }

 private:
  process::Process process_;
};

// $SPOTLIGHT_BINARY_DIR/<relative> (set by ctest), else <relative> in the build tree it was built
// in.
std::filesystem::path binary_path(const std::string& relative);

// A fresh temporary directory, removed by the caller.
std::filesystem::path make_temp_dir(const std::string& prefix);

// A fresh temporary directory (make_temp_dir) that is removed, with everything in it, when this
// goes. As a member, declare it before the processes that write into it (members are destroyed in
// reverse), so that it is removed after they are gone.
struct TempDir {
  explicit TempDir(const std::string& prefix) : path(make_temp_dir(prefix)) {}
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::filesystem::path path;
};

// A loopback TCP port that was free a moment ago.
int free_port();

}  // namespace spotlight::testing
