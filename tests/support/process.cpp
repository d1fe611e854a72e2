#include "tests/support/process.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace spotlight::testing {
namespace {

process::ProcessOptions options_for(const std::filesystem::path& binary,
                                    const std::vector<std::string>& args,
                                    const std::filesystem::path& log) {
  process::ProcessOptions o;
  o.argv = {binary.string()};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.log = log;
  return o;
}

}  // namespace

Process::Process(const std::filesystem::path& binary, const std::vector<std::string>& args,
                 const std::filesystem::path& log)
    : process_(options_for(binary, args, log)) {}

Process::Process(process::ProcessOptions options) : process_(std::move(options)) {}

void Process::signal(int signal_number) {
  process_.signal(signal_number);
}

std::optional<int> Process::wait(std::chrono::milliseconds timeout) {
  const auto status = process_.wait_for(timeout);
  if (!status) return std::nullopt;
  return status->shell_code();
}

bool Process::running() {
  return process_.running();
}

std::string Process::log_tail(size_t bytes) const {
  std::ifstream in(process_.options().log);
  std::stringstream s;
  s << in.rdbuf();
  const std::string all = s.str();
  return all.size() > bytes ? all.substr(all.size() - bytes) : all;
}

std::filesystem::path binary_path(const std::string& relative) {
  if (const char* dir = std::getenv("SPOTLIGHT_BINARY_DIR"))
    return std::filesystem::path(dir) / relative;
  return std::filesystem::path(SPOTLIGHT_DEFAULT_BINARY_DIR) / relative;
}

std::filesystem::path make_temp_dir(const std::string& prefix) {
  std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path, ignored);
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error("free_port: cannot bind a loopback socket");
  }
  const int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

}  // namespace spotlight::testing
