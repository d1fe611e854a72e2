#include "common/redis/client.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include <hiredis/hiredis.h>
#include <sys/socket.h>

#include "common/redis/detail/sigpipe_guard.hpp"

namespace spotlight::redis {
namespace {

timeval to_timeval(std::chrono::milliseconds timeout) {
  const auto ms = std::max<std::int64_t>(timeout.count(), 1);
  return timeval{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>((ms % 1000) * 1000)};
}

using detail::SigpipeGuard;

struct ReplyDeleter {
  void operator()(void* reply) const { freeReplyObject(reply); }
};
using ReplyPtr = std::unique_ptr<void, ReplyDeleter>;

Reply convert(const redisReply* r) {
  switch (r->type) {
    case REDIS_REPLY_STRING:
      return Reply{std::string(r->str, r->len)};
    case REDIS_REPLY_INTEGER:
      return Reply{static_cast<std::int64_t>(r->integer)};
    case REDIS_REPLY_NIL:
      return Reply{Reply::Nil{}};
    case REDIS_REPLY_STATUS:
      return Reply{Reply::Status{std::string(r->str, r->len)}};
    case REDIS_REPLY_ERROR:
      return Reply{Reply::Error{std::string(r->str, r->len)}};
    case REDIS_REPLY_ARRAY: {
      Reply::Array items;
      items.reserve(r->elements);
      for (size_t i = 0; i < r->elements; ++i)
        items.push_back(convert(r->element[i]));
      return Reply{std::move(items)};
    }
    default:
      throw RedisReplyError("redis reply: unknown reply type " + std::to_string(r->type));
  }
}

std::string command_name(std::string_view first) {
  std::string name(first.substr(0, 32));
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return name;
}

bool is_timeout_errno(int err) {
  return err == EAGAIN || err == EWOULDBLOCK || err == ETIMEDOUT;
}

}  // namespace

RedisOptions with_env_credentials(RedisOptions options) {
  // An empty variable is no password: deployments pass it through whether it is set or not.
  if (const char* password = std::getenv(kPasswordEnvVar); password != nullptr && *password) {
    options.password = password;
  }
  if (const char* user = std::getenv(kUserEnvVar); user != nullptr && options.user.empty()) {
    options.user = user;
  }
  return options;
}

struct RedisClient::Impl {
  RedisOptions options;
  redisContext* ctx = nullptr;
  std::uint64_t opened = 0;
  std::unordered_map<std::string, std::string> script_shas;  // source -> SHA1 (from SCRIPT LOAD)

  explicit Impl(RedisOptions o) : options(std::move(o)) {}
  ~Impl() { close(); }

  std::string endpoint() const { return options.host + ":" + std::to_string(options.port); }

  void close() {
    if (ctx != nullptr) redisFree(ctx);
    ctx = nullptr;
  }

  // False when the server closed the socket, reset it, or sent bytes nobody asked for.
  bool alive() const {
    if (ctx == nullptr || ctx->err != 0) return false;
    char byte = 0;
    const ssize_t n = ::recv(ctx->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    return false;  // 0: orderly shutdown by the server; > 0: unsolicited data
  }

  void ensure_connected() {
    if (ctx != nullptr && !alive()) close();
    if (ctx == nullptr) open();
  }

  void open() {
    errno = 0;
    redisContext* c = redisConnectWithTimeout(options.host.c_str(), options.port,
                                              to_timeval(options.connect_timeout));
    const int saved_errno = errno;
    if (c == nullptr)
      throw RedisUnavailable("redis connect to " + endpoint() + ": out of memory", false);
    if (c->err != 0) {
      const std::string why = c->errstr;
      const bool timeout = is_timeout_errno(saved_errno) || why == std::strerror(ETIMEDOUT);
      redisFree(c);
      throw RedisUnavailable("redis connect to " + endpoint() + ": " + why, timeout);
    }
    ctx = c;
    ++opened;
    if (redisSetTimeout(ctx, to_timeval(options.command_timeout)) != REDIS_OK ||
        redisEnableKeepAlive(ctx) != REDIS_OK) {
      const std::string why = ctx->errstr;
      close();
      throw RedisUnavailable("redis connect to " + endpoint() + ": " + why, false);
    }
    try {
      if (options.password) {
        try {
          if (options.user.empty()) {
            run({"AUTH", *options.password});
          } else {
            run({"AUTH", options.user, *options.password});
          }
        } catch (const RedisCommandError& e) {
          // Say who we tried to be and where the credentials come from; never echo the password.
          const std::string who =
              options.user.empty() ? "the default user" : "user '" + options.user + "'";
          throw RedisAuthError(e.command(), e.message() + " (authenticating as " + who + " on " +
                                                endpoint() + "; credentials from $" + kUserEnvVar +
                                                " / $" + kPasswordEnvVar + ")");
        }
      }
      if (options.db != 0) run({"SELECT", std::to_string(options.db)});
      if (!options.client_name.empty()) run({"CLIENT", "SETNAME", options.client_name});
    } catch (...) {
      close();
      throw;
    }
  }

  // An error reply that refuses who we are or what we may do (NOAUTH, WRONGPASS, NOPERM) throws
  // RedisAuthError: the caller must not retry it as if the server were away.
  void throw_if_auth_error(std::string_view first, const std::string& message) const {
    if (!is_auth_error_code(message.substr(0, message.find(' ')))) return;
    const std::string who =
        options.user.empty() ? "the default user" : "user '" + options.user + "'";
    throw RedisAuthError(command_name(first), message + " (as " + who + " on " + endpoint() +
                                                  "; credentials from $" + kUserEnvVar + " / $" +
                                                  kPasswordEnvVar + ")");
  }

  // An error reply of a server that cannot serve yet or right now (LOADING its dataset after a
  // restart, BUSY running a script, MASTERDOWN, TRYAGAIN, CLUSTERDOWN) throws RedisUnavailable:
  // the command did not run, and the caller retries as for a lost connection.
  void throw_if_not_ready(std::string_view first, const std::string& message) {
    const std::string code = message.substr(0, message.find(' '));
    if (code != "LOADING" && code != "BUSY" && code != "MASTERDOWN" && code != "TRYAGAIN" &&
        code != "CLUSTERDOWN") {
      return;
    }
    close();
    throw RedisUnavailable("redis " + command_name(first) + " on " + endpoint() + ": " + message,
                           false);
  }

  // Drops the connection and throws the RedisUnavailable that describes why it broke.
  [[noreturn]] void fail(std::string_view first, int saved_errno,
                         std::chrono::milliseconds timeout) {
    std::string why = ctx != nullptr ? std::string(ctx->errstr) : "not connected";
    const bool timeout_hit = ctx != nullptr && ctx->err == REDIS_ERR_IO &&
                             (is_timeout_errno(saved_errno) || why == std::strerror(EAGAIN));
    if (timeout_hit) why = "timed out after " + std::to_string(timeout.count()) + " ms";
    close();
    throw RedisUnavailable("redis " + command_name(first) + " on " + endpoint() + ": " + why,
                           timeout_hit);
  }

  // One command on the current connection (which must exist).
  Reply run(std::span<const std::string_view> argv,
            std::optional<std::chrono::milliseconds> timeout = std::nullopt) {
    if (argv.empty()) throw RedisError("redis: empty command");
    std::vector<const char*> args(argv.size());
    std::vector<size_t> lens(argv.size());
    for (size_t i = 0; i < argv.size(); ++i) {
      args[i] = argv[i].data();
      lens[i] = argv[i].size();
    }
    const auto effective = timeout.value_or(options.command_timeout);
    if (timeout && redisSetTimeout(ctx, to_timeval(*timeout)) != REDIS_OK)
      fail(argv[0], errno, effective);
    ReplyPtr raw;
    int saved_errno = 0;
    {
      SigpipeGuard guard;
      errno = 0;
      raw.reset(redisCommandArgv(ctx, static_cast<int>(args.size()), args.data(), lens.data()));
      saved_errno = errno;
    }
    if (!raw) fail(argv[0], saved_errno, effective);
    if (timeout && redisSetTimeout(ctx, to_timeval(options.command_timeout)) != REDIS_OK) {
      fail(argv[0], errno, effective);
    }
    const auto* reply = static_cast<const redisReply*>(raw.get());
    if (reply->type == REDIS_REPLY_ERROR) {
      std::string message(reply->str, reply->len);
      throw_if_auth_error(argv[0], message);
      throw_if_not_ready(argv[0], message);
      throw RedisCommandError(command_name(argv[0]), std::move(message));
    }
    return convert(reply);
  }

  Reply run(std::initializer_list<std::string_view> argv) {
    return run(std::span<const std::string_view>(argv.begin(), argv.size()));
  }

  const std::string& load(const Script& script) {
    const Reply sha = run({"SCRIPT", "LOAD", script.source()});
    return script_shas[script.source()] = sha.as_string();
  }

  Reply eval(const Script& script, std::span<const std::string_view> keys,
             std::span<const std::string_view> args) {
    ensure_connected();
    auto it = script_shas.find(script.source());
    std::string sha = it != script_shas.end() ? it->second : load(script);
    const std::string num_keys = std::to_string(keys.size());
    std::vector<std::string_view> argv;
    argv.reserve(3 + keys.size() + args.size());
    argv.push_back("EVALSHA");
    argv.push_back(sha);
    argv.push_back(num_keys);
    argv.insert(argv.end(), keys.begin(), keys.end());
    argv.insert(argv.end(), args.begin(), args.end());
    try {
      return run(argv);
    } catch (const RedisCommandError& e) {
      if (e.code() != "NOSCRIPT") throw;
    }
    sha = load(script);  // the server forgot it (restart, SCRIPT FLUSH): nothing ran, so retry
    argv[1] = sha;
    return run(argv);
  }
};

RedisClient::RedisClient(RedisOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
RedisClient::~RedisClient() = default;
RedisClient::RedisClient(RedisClient&&) noexcept = default;
RedisClient& RedisClient::operator=(RedisClient&&) noexcept = default;

Reply RedisClient::command(std::span<const std::string_view> argv) {
  impl_->ensure_connected();
  return impl_->run(argv);
}

Reply RedisClient::command(std::initializer_list<std::string_view> argv) {
  return command(std::span<const std::string_view>(argv.begin(), argv.size()));
}

Reply RedisClient::command(const std::vector<std::string>& argv) {
  const std::vector<std::string_view> views(argv.begin(), argv.end());
  return command(std::span<const std::string_view>(views));
}

Reply RedisClient::command_with_timeout(std::span<const std::string_view> argv,
                                        std::chrono::milliseconds timeout) {
  impl_->ensure_connected();
  return impl_->run(argv, timeout);
}

std::vector<Reply> RedisClient::pipeline(const std::vector<std::vector<std::string>>& commands) {
  std::vector<Reply> replies;
  if (commands.empty()) return replies;
  impl_->ensure_connected();
  redisContext* ctx = impl_->ctx;
  replies.reserve(commands.size());
  SigpipeGuard guard;
  std::vector<const char*> args;
  std::vector<size_t> lens;
  for (const auto& argv : commands) {
    if (argv.empty()) throw RedisError("redis: empty command in pipeline");
    args.resize(argv.size());
    lens.resize(argv.size());
    for (size_t i = 0; i < argv.size(); ++i) {
      args[i] = argv[i].data();
      lens[i] = argv[i].size();
    }
    if (redisAppendCommandArgv(ctx, static_cast<int>(args.size()), args.data(), lens.data()) !=
        REDIS_OK) {
      impl_->fail(argv[0], errno, impl_->options.command_timeout);
    }
  }
  for (const auto& argv : commands) {
    void* raw_ptr = nullptr;
    errno = 0;
    const int rc = redisGetReply(ctx, &raw_ptr);
    const int saved_errno = errno;
    ReplyPtr raw(raw_ptr);
    if (rc != REDIS_OK || !raw) impl_->fail(argv[0], saved_errno, impl_->options.command_timeout);
    replies.push_back(convert(static_cast<const redisReply*>(raw.get())));
  }
  for (std::size_t i = 0; i < replies.size(); ++i) {  // every reply read: the connection is clean
    if (!replies[i].is_error()) continue;
    impl_->throw_if_auth_error(commands[i][0], replies[i].as_error());
    impl_->throw_if_not_ready(commands[i][0], replies[i].as_error());
  }
  return replies;
}

Reply RedisClient::eval(const Script& script, std::span<const std::string_view> keys,
                        std::span<const std::string_view> args) {
  return impl_->eval(script, keys, args);
}

Reply RedisClient::eval(const Script& script, std::initializer_list<std::string_view> keys,
                        std::initializer_list<std::string_view> args) {
  return impl_->eval(script, std::span<const std::string_view>(keys.begin(), keys.size()),
                     std::span<const std::string_view>(args.begin(), args.size()));
}

void RedisClient::ping() {
  command({"PING"});
}

void RedisClient::connect() {
  impl_->ensure_connected();
}

void RedisClient::disconnect() {
  impl_->close();
}

bool RedisClient::connected() const {
  return impl_->ctx != nullptr && impl_->ctx->err == 0;
}

std::uint64_t RedisClient::connections_opened() const {
  return impl_->opened;
}

const RedisOptions& RedisClient::options() const {
  return impl_->options;
}

}  // namespace spotlight::redis
