#pragma once
// One rank process of a node, spoken to over its stdin/stdout: one JSON object per line each way
// (services/node/rank_worker.hpp lists the commands). The child dies with the parent *thread*
// that started it (PR_SET_PDEATHSIG); its stderr goes to the parent's stderr or a log file.

#include <chrono>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/types.h>

namespace spotlight::node {

// The process exited or closed its stdout: it is lost.
class RankLost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class RankProcess {
 public:
  // Starts `binary args...`. Throws std::runtime_error if it cannot be started.
  RankProcess(const std::filesystem::path& binary, const std::vector<std::string>& args,
              const std::optional<std::filesystem::path>& stderr_log = std::nullopt);
  ~RankProcess();  // SIGKILLs a running child and reaps it
  RankProcess(const RankProcess&) = delete;
  RankProcess& operator=(const RankProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Writes one line (a '\n' is appended). Throws RankLost if the child's stdin is closed.
  void send(const std::string& line);
  // The next line, or nullopt after `timeout`. Throws RankLost at end of stream.
  std::optional<std::string> receive(std::chrono::milliseconds timeout);
  // Reaps the child if it has exited (no wait); true while it runs.
  bool running();
  void kill(int signal_number);
  int stdout_fd() const { return out_fd_; }

 private:
  pid_t pid_ = -1;
  int in_fd_ = -1;   // child's stdin
  int out_fd_ = -1;  // child's stdout
  std::string buffer_;
  bool exited_ = false;
};

}  // namespace spotlight::node
