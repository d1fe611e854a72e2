#pragma once
// One rank process of a node, spoken to over its stdin/stdout: one JSON object per line each way
// (services/node/rank_worker.hpp lists the commands). A common/process child with both pipes: it
// dies with the parent *thread* that started it (PR_SET_PDEATHSIG); its stderr goes to the
// parent's stderr or a log file.

#include <chrono>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/types.h>

#include "common/process/line_reader.hpp"
#include "common/process/process.hpp"

namespace spotlight::node {

// The process exited or closed its stdout: it is lost.
class RankLost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class RankProcess {
 public:
  // Starts `binary args...`. Throws process::ProcessError (a std::runtime_error) if it cannot be
  // started.
  RankProcess(const std::filesystem::path& binary, const std::vector<std::string>& args,
              const std::optional<std::filesystem::path>& stderr_log = std::nullopt);
  // Destroying it SIGKILLs a running child and reaps it.
  RankProcess(const RankProcess&) = delete;
  RankProcess& operator=(const RankProcess&) = delete;

  pid_t pid() const { return process_.pid(); }
  // Writes one line (a '\n' is appended). Throws RankLost if the child's stdin is closed.
  void send(const std::string& line);
  // The next line, or nullopt after `timeout`. Throws RankLost at end of stream.
  std::optional<std::string> receive(std::chrono::milliseconds timeout);
  // Reaps the child if it has exited (no wait); true while it runs.
  bool running();
  void kill(int signal_number);
  // Polled for input by the scheduler; lines already buffered are returned by receive() first.
  int stdout_fd() const { return process_.output_fd(); }

 private:
  process::Process process_;
  process::LineReader lines_;
};

}  // namespace spotlight::node
