// RedisClient against a real redis-server: binary safety, reply types, typed errors, reconnects,
// timeouts, credentials, scripts, SIGPIPE safety.

#include <cerrno>
#include <chrono>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/redis/client.hpp"
#include "common/redis/detail/sigpipe_guard.hpp"
#include "tests/support/redis_server.hpp"

namespace spotlight::redis {
namespace {

using std::chrono::milliseconds;
using testing::RedisServer;
using testing::RedisServerOptions;

RedisServerOptions without_aof() {
  RedisServerOptions o;
  o.appendonly = false;
  return o;
}

class RedisClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (RedisServer::find_executable()) server_ = std::make_unique<RedisServer>();
  }
  static void TearDownTestSuite() { server_.reset(); }
  void SetUp() override { SPOTLIGHT_REQUIRE_REDIS_SERVER(); }

  // A key unique to the running test, so tests sharing the server do not collide.
  static std::string key(const std::string& name) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return std::string(info->name()) + ":" + name;
  }

  static RedisServer& server() { return *server_; }

 private:
  static std::unique_ptr<RedisServer> server_;
};

std::unique_ptr<RedisServer> RedisClientTest::server_;

TEST_F(RedisClientTest, BinarySafeRoundTrip) {
  RedisClient client(server().client_options());
  std::string bytes;
  for (int i = 0; i < 256; ++i)
    bytes.push_back(static_cast<char>(i));
  bytes += std::string("\r\n$3\r\nnul\0in the middle", 23);
  EXPECT_EQ(client.command({"SET", key("k"), bytes}).as_status(), "OK");
  const Reply got = client.command({"GET", key("k")});
  ASSERT_TRUE(got.is_string());
  EXPECT_EQ(got.as_string(), bytes);
  EXPECT_EQ(client.command({"STRLEN", key("k")}).as_integer(), static_cast<int64_t>(bytes.size()));
}

TEST_F(RedisClientTest, ReplyTypes) {
  RedisClient client(server().client_options());
  EXPECT_EQ(client.command({"PING"}).as_status(), "PONG");
  EXPECT_TRUE(client.command({"GET", key("missing")}).is_nil());
  EXPECT_EQ(client.command({"GET", key("missing")}).as_optional_string(), std::nullopt);
  EXPECT_EQ(client.command({"INCRBY", key("n"), "41"}).as_integer(), 41);
  EXPECT_EQ(client.command({"INCR", key("n")}).as_integer(), 42);
  client.command({"RPUSH", key("l"), "a", "b", "c"});
  const Reply list = client.command({"LRANGE", key("l"), "0", "-1"});
  ASSERT_EQ(list.as_array().size(), 3u);
  EXPECT_EQ(list.as_array()[2].as_string(), "c");
  EXPECT_THROW(list.as_integer(), RedisReplyError);
  EXPECT_THROW(client.command({"PING"}).as_string(), RedisReplyError);
}

TEST_F(RedisClientTest, ErrorReplyIsTypedAndConnectionSurvives) {
  RedisClient client(server().client_options());
  client.command({"SET", key("s"), "x"});
  try {
    client.command({"LPUSH", key("s"), "y"});
    FAIL() << "expected WRONGTYPE";
  } catch (const RedisCommandError& e) {
    EXPECT_EQ(e.code(), "WRONGTYPE");
    EXPECT_EQ(e.command(), "LPUSH");
  }
  EXPECT_THROW(client.command({"NOSUCHCOMMAND"}), RedisCommandError);
  EXPECT_EQ(client.command({"GET", key("s")}).as_string(), "x");
  EXPECT_EQ(client.connections_opened(), 1u);
}

TEST_F(RedisClientTest, PipelineKeepsErrorsInPlace) {
  RedisClient client(server().client_options());
  const auto replies = client.pipeline(
      {{"SET", key("p"), "1"}, {"LPUSH", key("p"), "x"}, {"INCR", key("p")}, {"GET", key("p")}});
  ASSERT_EQ(replies.size(), 4u);
  EXPECT_TRUE(replies[0].is_status());
  ASSERT_TRUE(replies[1].is_error());
  EXPECT_NE(replies[1].as_error().find("WRONGTYPE"), std::string::npos);
  EXPECT_EQ(replies[2].as_integer(), 2);
  EXPECT_EQ(replies[3].as_string(), "2");
}

TEST_F(RedisClientTest, ScriptsSurviveScriptFlush) {
  RedisClient client(server().client_options());
  const Script script("return redis.call('INCRBY', KEYS[1], ARGV[1])");
  EXPECT_EQ(client.eval(script, {key("c")}, {"5"}).as_integer(), 5);
  RedisClient other(server().client_options());
  other.command({"SCRIPT", "FLUSH"});
  EXPECT_EQ(client.eval(script, {key("c")}, {"2"}).as_integer(), 7);  // NOSCRIPT -> reload
  const Script failing("return redis.call('LPUSH', KEYS[1], 'x')");
  EXPECT_THROW(client.eval(failing, {key("c")}, {}), RedisCommandError);
}

TEST_F(RedisClientTest, BlockingCommandHonoursItsOwnTimeout) {
  RedisOptions options = server().client_options();
  options.command_timeout = milliseconds(100);
  RedisClient client(options);
  // A BLPOP of 0.3 s outlives the 100 ms command timeout unless it gets its own.
  const std::string_view argv[] = {"BLPOP", "nothing-here", "0.3"};
  EXPECT_TRUE(client.command_with_timeout(argv, milliseconds(2000)).is_nil());
  try {
    client.command({"BLPOP", key("nothing"), "2"});
    FAIL() << "expected a timeout";
  } catch (const RedisUnavailable& e) {
    EXPECT_TRUE(e.is_timeout()) << e.what();
  }
  EXPECT_FALSE(client.connected());
  EXPECT_EQ(client.command({"PING"}).as_status(), "PONG");  // reconnects
  EXPECT_EQ(client.connections_opened(), 2u);
}

TEST_F(RedisClientTest, RefusedConnectionIsUnavailableNotTimeout) {
  auto dead = std::make_unique<RedisServer>(without_aof());
  RedisOptions options = dead->client_options();
  dead.reset();  // nothing listens on that port now
  RedisClient client(options);
  try {
    client.ping();
    FAIL() << "expected RedisUnavailable";
  } catch (const RedisUnavailable& e) {
    EXPECT_FALSE(e.is_timeout()) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(options.port)), std::string::npos);
  }
}

TEST_F(RedisClientTest, EnvCredentials) {
  ::setenv(kPasswordEnvVar, "s3cret", 1);
  ::setenv(kUserEnvVar, "alice", 1);
  RedisOptions options = with_env_credentials({});
  EXPECT_EQ(options.password, "s3cret");
  EXPECT_EQ(options.user, "alice");
  RedisOptions explicit_user;
  explicit_user.user = "bob";
  EXPECT_EQ(with_env_credentials(explicit_user).user, "bob");
  ::unsetenv(kPasswordEnvVar);
  ::unsetenv(kUserEnvVar);
  EXPECT_EQ(with_env_credentials({}).password, std::nullopt);
  // Compose and Kubernetes pass the variable through set or not: empty means no password.
  ::setenv(kPasswordEnvVar, "", 1);
  EXPECT_EQ(with_env_credentials({}).password, std::nullopt);
  ::unsetenv(kPasswordEnvVar);
}

TEST(RedisClientAuthTest, PasswordAndAclUser) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  RedisServerOptions with_password = without_aof();
  with_password.password = "pw-default";
  RedisServer server(with_password);
  RedisOptions anonymous = server.client_options();
  anonymous.password.reset();
  try {
    RedisClient(anonymous).command({"SET", "k", "v"});
    FAIL() << "expected NOAUTH";
  } catch (const RedisAuthError& e) {  // not retried by the services as if Redis were away
    EXPECT_EQ(e.code(), "NOAUTH");
  }
  RedisClient admin(server.client_options());
  admin.command({"ACL", "SETUSER", "alice", "on", ">alice-pw", "~*", "+@all"});

  RedisOptions alice = server.client_options();
  alice.user = "alice";
  alice.password = "alice-pw";
  alice.client_name = "alice-conn";
  RedisClient alice_client(alice);
  EXPECT_EQ(alice_client.command({"ACL", "WHOAMI"}).as_string(), "alice");
  EXPECT_EQ(alice_client.command({"CLIENT", "GETNAME"}).as_string(), "alice-conn");

  alice.password = "wrong";
  RedisClient wrong(alice);
  EXPECT_THROW(wrong.ping(), RedisAuthError);
  EXPECT_FALSE(wrong.connected());
}

TEST(RedisClientAuthTest, WrongPasswordErrorNamesUserAndEndpointButNotThePassword) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  RedisServerOptions with_password = without_aof();
  with_password.password = "pw-default";
  RedisServer server(with_password);
  RedisClient(server.client_options())
      .command({"ACL", "SETUSER", "bob", "on", ">bob-pw", "~*", "+@all"});
  RedisOptions bob = server.client_options();
  bob.user = "bob";
  bob.password = "not-bobs-secret";
  try {
    RedisClient(bob).ping();
    FAIL() << "expected WRONGPASS";
  } catch (const RedisAuthError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), "WRONGPASS") << what;
    EXPECT_EQ(e.command(), "AUTH") << what;
    EXPECT_NE(what.find("user 'bob'"), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(server.port())), std::string::npos) << what;
    EXPECT_NE(what.find(kPasswordEnvVar), std::string::npos) << what;
    EXPECT_EQ(what.find("not-bobs-secret"), std::string::npos) << what;
  }
}

// Credentials from the environment only, re-sent on every new connection (here: after Redis
// restarted, which drops every connection).
TEST(RedisClientAuthTest, EnvCredentialsAuthenticateEveryReconnect) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  RedisServerOptions with_password = RedisServerOptions{};
  with_password.password = "pw-default";
  RedisServer server(with_password);
  RedisClient(server.client_options())
      .command({"ACL", "SETUSER", "carol", "on", ">carol-pw", "~*", "+@all"});
  // ACL users do not survive a restart without an ACL file: re-create carol after it.
  ::setenv(kUserEnvVar, "carol", 1);
  ::setenv(kPasswordEnvVar, "carol-pw", 1);
  RedisOptions from_env = server.client_options();
  from_env.password.reset();
  from_env = with_env_credentials(from_env);
  ::unsetenv(kUserEnvVar);
  ::unsetenv(kPasswordEnvVar);
  RedisClient client(from_env);
  EXPECT_EQ(client.command({"ACL", "WHOAMI"}).as_string(), "carol");
  server.restart();
  RedisClient(server.client_options())
      .command({"ACL", "SETUSER", "carol", "on", ">carol-pw", "~*", "+@all"});
  EXPECT_EQ(client.command({"ACL", "WHOAMI"}).as_string(), "carol");  // a new, authenticated one
  EXPECT_GE(client.connections_opened(), 2u);
}

TEST(RedisClientRestartTest, DeadRedisIsTypedErrorThenReconnects) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  RedisServer server;
  RedisClient client(server.client_options());
  client.command({"SET", "k", "before"});
  server.kill();
  for (int i = 0; i < 3; ++i) {
    EXPECT_THROW(client.command({"GET", "k"}), RedisUnavailable);  // every try while down
  }
  server.start();
  EXPECT_EQ(client.command({"GET", "k"}).as_string(), "before");  // AOF kept it
  EXPECT_GE(client.connections_opened(), 2u);
}

TEST(RedisClientRestartTest, IdleConnectionToRestartedServerIsReplacedSilently) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  RedisServer server;
  RedisClient client(server.client_options());
  client.command({"SET", "k", "v"});
  server.restart();
  // The old socket was closed by the server while idle: noticed before sending, no error.
  EXPECT_EQ(client.command({"GET", "k"}).as_string(), "v");
  EXPECT_EQ(client.connections_opened(), 2u);
}

TEST(RedisClientRestartTest, HungServerTimesOut) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  RedisServer server(without_aof());
  RedisOptions options = server.client_options();
  options.command_timeout = milliseconds(150);
  RedisClient client(options);
  client.ping();
  server.pause();
  try {
    client.ping();
    ADD_FAILURE() << "expected a timeout";
  } catch (const RedisUnavailable& e) {
    EXPECT_TRUE(e.is_timeout()) << e.what();
  }
  server.resume();
  EXPECT_NO_THROW(client.ping());
}

TEST(RedisClientRestartTest, ServerDroppingConnectionMidWriteIsUnavailable) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  // The server rejects the oversized bulk header and closes the connection while the client is
  // still writing the rest: a typed error, no crash, and the next command reconnects.
  RedisServerOptions small_bulk = without_aof();
  small_bulk.extra_args = {"--proto-max-bulk-len", "1mb"};
  RedisServer server(small_bulk);
  RedisClient client(server.client_options());
  client.ping();
  const std::string big(32 << 20, 'x');
  try {
    client.command({"SET", "big", big});
    ADD_FAILURE() << "expected the server to drop the connection";
  } catch (const RedisUnavailable& e) {
    EXPECT_FALSE(e.is_timeout()) << e.what();
  }
  EXPECT_NO_THROW(client.ping());
  EXPECT_EQ(client.connections_opened(), 2u);
}

TEST(SigpipeGuardTest, WriteToClosedPeerFailsWithEpipeInsteadOfKilling) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  ::close(fds[1]);
  ssize_t written = 0;
  int write_errno = 0;
  {
    detail::SigpipeGuard guard;
    written = ::write(fds[0], "x", 1);  // would raise SIGPIPE (default action: terminate)
    write_errno = errno;
  }
  ::close(fds[0]);
  EXPECT_EQ(written, -1);
  EXPECT_EQ(write_errno, EPIPE);
  sigset_t pending;
  sigemptyset(&pending);
  sigpending(&pending);
  EXPECT_EQ(sigismember(&pending, SIGPIPE), 0) << "the SIGPIPE must be consumed, not left pending";
  sigset_t mask;
  pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  EXPECT_EQ(sigismember(&mask, SIGPIPE), 0) << "the signal mask must be restored";
}

}  // namespace
}  // namespace spotlight::redis
