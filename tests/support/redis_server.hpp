#pragma once
// A real redis-server for tests (library `spotlight_test_redis`, header
// "tests/support/redis_server.hpp").
//
//   RedisServer server;                       // starts on a free 127.0.0.1 port, waits for PING
//   redis::RedisClient client(server.client_options());
//   ...
//   server.kill();      // SIGKILL: no shutdown work, like a crashed/preempted node
//   server.start();     // same port, same dir: the AOF is replayed, waits until it answers PING
//   server.restart();   // stop() (SIGTERM, clean shutdown) then start()
//   server.pause();     // SIGSTOP: the server hangs (clients time out) until resume()
//
// Contract:
// - Each server has its own temp dir (mkdtemp under $TMPDIR or /tmp) holding its AOF, its log
//   (redis.log) and its stdout/stderr; the destructor kills the server and removes the dir unless
//   `keep_dir` is set. Several servers (and several test processes) can run at once.
// - The port is a free loopback port picked by binding port 0; if another process grabs it before
//   redis-server binds, the first start retries with a new port. Restarts keep the port (and wait
//   for it to be free again, up to start_timeout).
// - Readiness is polled (PING, with a growing back-off) until start_timeout; a server that exits
//   during start throws RedisServerError with the tail of its log.
// - Defaults are for durability tests: appendonly yes, appendfsync always, save "" (no RDB
//   snapshots), so every acknowledged write survives kill(). Use appendfsync everysec for speed.
// - The server is a common/process child: it gets SIGKILL when the *thread* that started it exits
//   (PR_SET_PDEATHSIG), so a crashed test leaves no redis-server behind. Start servers from a
//   thread that outlives them (the test body or fixture, not a short-lived worker thread).
// - Not thread-safe: drive one RedisServer from one thread.
//
// Skipping: tests that need a server call `SPOTLIGHT_REQUIRE_REDIS_SERVER()` first, which
// GTEST_SKIPs with the reason when no redis-server executable exists.

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/types.h>

#include "common/redis/client.hpp"

namespace spotlight::process {
class Process;
}

namespace spotlight::testing {

inline constexpr std::chrono::milliseconds kDefaultRedisStartTimeout{15000};
inline constexpr std::chrono::milliseconds kDefaultRedisStopTimeout{10000};
// Environment variable naming the redis-server executable (default: "redis-server" on PATH).
inline constexpr const char* kRedisServerEnvVar = "SPOTLIGHT_REDIS_SERVER";

class RedisServerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RedisServerOptions {
  std::string executable;               // empty: $SPOTLIGHT_REDIS_SERVER, else PATH lookup
  bool appendonly = true;               // AOF persistence
  std::string appendfsync = "always";   // "always" | "everysec" | "no"
  std::optional<std::string> password;  // requirepass; client_options() carries it
  // An ACL user client_options() (and the readiness probe) log in as, with `password`; for
  // servers given an --aclfile in extra_args (then requirepass is not set).
  std::optional<std::string> user;
  std::vector<std::string> extra_args;  // more redis-server arguments, e.g. {"--maxmemory", "64mb"}
  std::chrono::milliseconds start_timeout = kDefaultRedisStartTimeout;
  std::chrono::milliseconds stop_timeout = kDefaultRedisStopTimeout;  // SIGTERM, then SIGKILL
  bool keep_dir = false;  // keep the temp dir (AOF, log) after destruction, for post-mortems
};

class RedisServer {
 public:
  // Starts the server and waits until it answers PING; throws RedisServerError.
  explicit RedisServer(RedisServerOptions options = {});
  // Kills the server (SIGKILL) if it runs and removes its dir (unless keep_dir).
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // The redis-server executable that would be used, or nullopt when there is none.
  static std::optional<std::string> find_executable(const std::string& preferred = {});

  const std::string& host() const { return host_; }  // "127.0.0.1"
  int port() const { return port_; }
  const std::filesystem::path& dir() const { return dir_; }
  pid_t pid() const;                                    // -1 when not running
  bool running() const { return process_ != nullptr; }  // started and not yet reaped
  // host, port, password; short connect timeout. Adjust the rest as needed.
  redis::RedisOptions client_options() const;

  // Starts a stopped server on the same port and dir; waits for PING. No-op if running.
  void start();
  // SIGTERM and waits for exit (a clean shutdown: the AOF is flushed and fsynced). After
  // stop_timeout it escalates to SIGKILL.
  void stop();
  // SIGKILL and waits for exit.
  void kill();
  // stop() then start().
  void restart();
  // SIGSTOP / SIGCONT: the process stays, connections hang (tests of command timeouts).
  void pause();
  void resume();

  // The last `bytes` of redis.log (for failure messages).
  std::string log_tail(std::size_t bytes = 4000) const;

 private:
  void launch();
  void wait_ready();
  bool wait_exit(std::chrono::milliseconds timeout);  // true when it exited (and was reaped)

  RedisServerOptions options_;
  std::string executable_;
  std::string host_ = "127.0.0.1";
  int port_ = 0;
  std::filesystem::path dir_;
  std::unique_ptr<process::Process> process_;  // null when not running
};

}  // namespace spotlight::testing

// GTEST_SKIPs the current test when no redis-server executable can be found.
#define SPOTLIGHT_REQUIRE_REDIS_SERVER()                                                    \
  do {                                                                                      \
    if (!::spotlight::testing::RedisServer::find_executable()) {                            \
      GTEST_SKIP() << "redis-server not found (PATH or $SPOTLIGHT_REDIS_SERVER); skipping"; \
    }                                                                                       \
  } while (0)
