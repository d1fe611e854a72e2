#pragma once
// A small synchronous Redis client (hiredis underneath, hidden here).
//
// Thread-compatible, not thread-safe: one RedisClient per thread (a client is one connection).
// Commands are argv vectors and binary-safe. The client connects lazily, on the first command;
// after a broken connection (reset, closed, timed out) the failing command throws
// RedisUnavailable and the *next* command reconnects. A command is never retried by the client,
// because it may have reached the server; callers decide (most of ours are idempotent scripts).
// A connection the server closed while idle (e.g. Redis restarted) is noticed before the next
// command is sent and replaced silently, so that command is not lost to a stale socket.
//
// Credentials: the password never comes from configuration files. Use
// `with_env_credentials(options)` to read SPOTLIGHT_REDIS_PASSWORD (and optionally
// SPOTLIGHT_REDIS_USER) from the environment.
//
// SIGPIPE: writes to a closed socket do not raise SIGPIPE in the process; the client blocks and
// consumes it on the calling thread around its I/O.

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/redis/embedded_script.hpp"
#include "common/redis/errors.hpp"
#include "common/redis/reply.hpp"

namespace spotlight::redis {

inline constexpr std::chrono::milliseconds kDefaultConnectTimeout{2000};
inline constexpr std::chrono::milliseconds kDefaultCommandTimeout{5000};
inline constexpr int kDefaultRedisPort = 6379;
inline constexpr const char* kPasswordEnvVar = "SPOTLIGHT_REDIS_PASSWORD";
inline constexpr const char* kUserEnvVar = "SPOTLIGHT_REDIS_USER";

struct RedisOptions {
  std::string host = "127.0.0.1";
  int port = kDefaultRedisPort;
  std::string user;                     // ACL user; empty = the default user
  std::optional<std::string> password;  // from the environment only (with_env_credentials)
  int db = 0;                           // SELECT after connecting when non-zero
  std::string client_name;              // CLIENT SETNAME when non-empty (visible in CLIENT LIST)
  std::chrono::milliseconds connect_timeout = kDefaultConnectTimeout;
  std::chrono::milliseconds command_timeout = kDefaultCommandTimeout;  // per command round trip
};

// Returns `options` with password (and user, when set and options.user is empty) taken from the
// environment variables kPasswordEnvVar / kUserEnvVar. Unset or empty variables leave fields
// unchanged.
RedisOptions with_env_credentials(RedisOptions options);

// A Lua script run with EVALSHA, loaded on first use per connection and again after NOSCRIPT
// (e.g. after a Redis restart). The source is the identity.
class Script {
 public:
  explicit Script(std::string source) : source_(std::move(source)) {}
  explicit Script(const EmbeddedScript& script) : source_(script.text) {}
  const std::string& source() const { return source_; }

 private:
  std::string source_;
};

class RedisClient {
 public:
  explicit RedisClient(RedisOptions options = {});  // does not connect
  ~RedisClient();
  // Movable; a moved-from client may only be assigned to or destroyed.
  RedisClient(RedisClient&&) noexcept;
  RedisClient& operator=(RedisClient&&) noexcept;
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // Runs one command, e.g. command({"HSET", key, field, bytes}). An error reply throws
  // RedisCommandError; connection problems throw RedisUnavailable (see the top of this file).
  Reply command(std::span<const std::string_view> argv);
  Reply command(std::initializer_list<std::string_view> argv);
  Reply command(const std::vector<std::string>& argv);

  // As command(), with the socket timeout set to `timeout` for this command only: use it for
  // blocking commands (XREADGROUP BLOCK b, ...) with timeout > b.
  Reply command_with_timeout(std::span<const std::string_view> argv,
                             std::chrono::milliseconds timeout);

  // Sends all commands, then reads all replies (one round trip). Error replies are returned in
  // place as Reply::Error, not thrown, except RedisAuthError (NOAUTH, WRONGPASS, NOPERM: the
  // connection may not be used) and a server not ready (RedisUnavailable, like connection
  // problems).
  std::vector<Reply> pipeline(const std::vector<std::vector<std::string>>& commands);

  // EVALSHA script keys args, loading the script first if the server does not know it.
  Reply eval(const Script& script, std::span<const std::string_view> keys,
             std::span<const std::string_view> args);
  Reply eval(const Script& script, std::initializer_list<std::string_view> keys,
             std::initializer_list<std::string_view> args);

  // PING; throws like command().
  void ping();
  // Connects now if not connected (throws RedisUnavailable / RedisCommandError on AUTH failure).
  void connect();
  // Closes the connection; the next command reconnects.
  void disconnect();
  bool connected() const;
  // How many connections this client has opened (1 after the first command, +1 per reconnect).
  std::uint64_t connections_opened() const;

  const RedisOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spotlight::redis
