#include "services/node/rank_process.hpp"

#include <cerrno>

#include <sys/socket.h>

namespace spotlight::node {
namespace {

process::ProcessOptions rank_options(const std::filesystem::path& binary,
                                     const std::vector<std::string>& args,
                                     const std::optional<std::filesystem::path>& stderr_log) {
  process::ProcessOptions o;
  o.argv = {binary.string()};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.pipe_stdin = true;
  o.pipe_stdout = true;
  if (stderr_log) o.log = *stderr_log;  // stderr only: stdout is the pipe
  return o;
}

}  // namespace

RankProcess::RankProcess(const std::filesystem::path& binary, const std::vector<std::string>& args,
                         const std::optional<std::filesystem::path>& stderr_log)
    : process_(rank_options(binary, args, stderr_log)), lines_(process_.output_fd()) {}

void RankProcess::send(const std::string& line) {
  const std::string data = line + "\n";
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n =
        ::send(process_.input_fd(), data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw RankLost("node: rank pid " + std::to_string(pid()) + " stdin closed");
    done += static_cast<std::size_t>(n);
  }
}

std::optional<std::string> RankProcess::receive(std::chrono::milliseconds timeout) {
  auto line = lines_.next(timeout);
  if (!line && lines_.at_end()) {
    throw RankLost("node: rank pid " + std::to_string(pid()) + " closed its stdout");
  }
  return line;
}

bool RankProcess::running() {
  return process_.running();
}

void RankProcess::kill(int signal_number) {
  process_.signal(signal_number);
}

}  // namespace spotlight::node
