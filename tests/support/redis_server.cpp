#include "tests/support/redis_server.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/process/process.hpp"

namespace spotlight::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Thrown inside start() when the process exited before answering PING.
class ExitedDuringStart : public RedisServerError {
 public:
  ExitedDuringStart(const std::string& what, bool address_in_use)
      : RedisServerError(what), address_in_use_(address_in_use) {}
  bool address_in_use() const { return address_in_use_; }

 private:
  bool address_in_use_;
};

bool is_executable(const std::string& path) {
  return ::access(path.c_str(), X_OK) == 0;
}

std::optional<std::string> search_path(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    return is_executable(name) ? std::optional<std::string>(name) : std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + name;
    if (is_executable(candidate)) return candidate;
  }
  return std::nullopt;
}

// A loopback TCP port that was free a moment ago (bind to port 0 and read it back).
int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw RedisServerError(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw RedisServerError("bind 127.0.0.1:0: " + why);
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::filesystem::path make_temp_dir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = (std::filesystem::path(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") /
                         "spotlight-redis-XXXXXX")
                            .string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw RedisServerError("mkdtemp " + pattern + ": " + std::strerror(errno));
  }
  return pattern;
}

std::uintmax_t file_size_or_zero(const std::filesystem::path& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? 0 : size;
}

std::string read_from(const std::filesystem::path& path, std::uintmax_t offset) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(static_cast<std::streamoff>(offset));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

std::optional<std::string> RedisServer::find_executable(const std::string& preferred) {
  if (!preferred.empty()) return search_path(preferred);
  if (const char* env = std::getenv(kRedisServerEnvVar); env != nullptr && *env != '\0') {
    return search_path(env);
  }
  if (auto found = search_path("redis-server")) return found;
  for (const char* path : {"/usr/bin/redis-server", "/usr/local/bin/redis-server"}) {
    if (is_executable(path)) return std::string(path);
  }
  return std::nullopt;
}

RedisServer::RedisServer(RedisServerOptions options) : options_(std::move(options)) {
  auto executable = find_executable(options_.executable);
  if (!executable) {
    throw RedisServerError("redis-server executable not found (set $" +
                           std::string(kRedisServerEnvVar) + " or PATH)");
  }
  executable_ = *executable;
  dir_ = make_temp_dir();
  try {
    constexpr int kPortAttempts = 8;
    for (int attempt = 1;; ++attempt) {
      port_ = free_loopback_port();
      try {
        launch();
        wait_ready();
        return;
      } catch (const ExitedDuringStart& e) {
        if (!e.address_in_use() || attempt == kPortAttempts) throw;
      }
    }
  } catch (...) {
    if (running()) kill();
    if (!options_.keep_dir) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
    throw;
  }
}

RedisServer::~RedisServer() {
  process_.reset();  // SIGKILLed and reaped if it still runs
  if (!options_.keep_dir) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

pid_t RedisServer::pid() const {
  return process_ ? process_->pid() : -1;
}

redis::RedisOptions RedisServer::client_options() const {
  redis::RedisOptions o;
  o.host = host_;
  o.port = port_;
  o.password = options_.password;
  if (options_.user) o.user = *options_.user;
  o.connect_timeout = milliseconds(1000);
  return o;
}

void RedisServer::launch() {
  std::vector<std::string> args = {executable_,
                                   "--port",
                                   std::to_string(port_),
                                   "--bind",
                                   host_,
                                   "--dir",
                                   dir_.string(),
                                   "--daemonize",
                                   "no",
                                   "--logfile",
                                   (dir_ / "redis.log").string(),
                                   "--appendonly",
                                   options_.appendonly ? "yes" : "no",
                                   "--appendfsync",
                                   options_.appendfsync,
                                   "--save",
                                   ""};
  if (options_.password && !options_.user) {
    args.push_back("--requirepass");
    args.push_back(*options_.password);
  }
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
  process::ProcessOptions o;
  o.argv = std::move(args);
  o.log = dir_ / "redis.stdout";  // exec failures and what redis prints before its log opens
  try {
    process_ = std::make_unique<process::Process>(std::move(o));
  } catch (const process::ProcessError& e) {
    throw RedisServerError(e.what());
  }
}

void RedisServer::wait_ready() {
  const auto log_path = dir_ / "redis.log";
  const auto log_offset = file_size_or_zero(log_path);
  const auto deadline = Clock::now() + options_.start_timeout;
  redis::RedisOptions probe = client_options();
  probe.connect_timeout = milliseconds(250);
  probe.command_timeout = milliseconds(1000);
  auto delay = milliseconds(1);
  for (;;) {
    if (const auto status = process_->wait_for(milliseconds(0))) {
      process_.reset();
      // The log may be written just before exit; the stdout file has exec failures.
      const std::string log = read_from(log_path, log_offset);
      const std::string out = read_from(dir_ / "redis.stdout", 0);
      const bool in_use = log.find("Address already in use") != std::string::npos ||
                          out.find("Address already in use") != std::string::npos;
      std::string tail = log.size() > 2000 ? log.substr(log.size() - 2000) : log;
      throw ExitedDuringStart("redis-server on port " + std::to_string(port_) +
                                  " exited during start (" + status->describe() + "):\n" + tail +
                                  out.substr(0, 2000),
                              in_use);
    }
    try {
      redis::RedisClient client(probe);
      client.ping();  // -LOADING while the AOF replays: not ready yet
      return;
    } catch (const redis::RedisError&) {
    }
    if (Clock::now() >= deadline) {
      const std::string tail = log_tail();
      kill();
      throw RedisServerError("redis-server on port " + std::to_string(port_) +
                             " did not answer PING within " +
                             std::to_string(options_.start_timeout.count()) + " ms:\n" + tail);
    }
    std::this_thread::sleep_for(delay);  // back-off between readiness probes
    delay = std::min(delay * 2, milliseconds(50));
  }
}

bool RedisServer::wait_exit(milliseconds timeout) {
  if (!running()) return true;
  if (!process_->wait_for(timeout)) return false;
  process_.reset();
  return true;
}

void RedisServer::start() {
  if (running()) return;
  const auto deadline = Clock::now() + options_.start_timeout;
  for (;;) {
    launch();
    try {
      wait_ready();
      return;
    } catch (const ExitedDuringStart& e) {
      // The port is ours to keep: wait for whoever holds it to let go, until the deadline.
      if (!e.address_in_use() || Clock::now() >= deadline) throw;
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
}

void RedisServer::stop() {
  if (!running()) return;
  process_->terminate(options_.stop_timeout);  // SIGCONT too: a paused server must run to stop
  process_.reset();
}

void RedisServer::kill() {
  if (!running()) return;
  process_->signal(SIGKILL);
  if (!wait_exit(options_.stop_timeout)) {
    throw RedisServerError("redis-server pid " + std::to_string(pid()) + " survived SIGKILL");
  }
}

void RedisServer::restart() {
  stop();
  start();
}

void RedisServer::pause() {
  if (running()) process_->signal(SIGSTOP);
}

void RedisServer::resume() {
  if (running()) process_->signal(SIGCONT);
}

std::string RedisServer::log_tail(std::size_t bytes) const {
  const auto path = dir_ / "redis.log";
  const auto size = file_size_or_zero(path);
  return read_from(path, size > bytes ? size - bytes : 0);
}

}  // namespace spotlight::testing
