// The test utility itself: isolation, durability across kill/restart, clean-up, clear failures.

#include "tests/support/redis_server.hpp"

#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <signal.h>

#include "common/redis/client.hpp"

namespace spotlight::testing {
namespace {

TEST(RedisServerTest, ServersAreIsolatedAndCleanedUp) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  std::filesystem::path dir_a;
  {
    RedisServer a;
    RedisServer b;
    dir_a = a.dir();
    EXPECT_NE(a.port(), b.port());
    EXPECT_NE(a.dir(), b.dir());
    EXPECT_TRUE(std::filesystem::is_directory(a.dir()));
    redis::RedisClient ca(a.client_options());
    redis::RedisClient cb(b.client_options());
    ca.command({"SET", "k", "a"});
    EXPECT_TRUE(cb.command({"GET", "k"}).is_nil());
    const pid_t pid = a.pid();
    EXPECT_GT(pid, 0);
  }
  EXPECT_FALSE(std::filesystem::exists(dir_a));
}

TEST(RedisServerTest, KillAndStartKeepsAcknowledgedWrites) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  RedisServer server;
  const int port = server.port();
  {
    redis::RedisClient client(server.client_options());
    for (int i = 0; i < 200; ++i)
      client.command({"RPUSH", "list", std::to_string(i)});
  }
  server.kill();
  EXPECT_FALSE(server.running());
  server.start();
  EXPECT_EQ(server.port(), port);
  redis::RedisClient client(server.client_options());
  EXPECT_EQ(client.command({"LLEN", "list"}).as_integer(), 200);
  EXPECT_EQ(client.command({"LINDEX", "list", "-1"}).as_string(), "199");
}

TEST(RedisServerTest, StopIsCleanAndRestartable) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  RedisServer server;
  redis::RedisClient(server.client_options()).command({"SET", "k", "v"});
  server.stop();
  EXPECT_FALSE(server.running());
  EXPECT_NE(server.log_tail().find("ready to exit"), std::string::npos) << server.log_tail();
  server.restart();
  EXPECT_TRUE(server.running());
  EXPECT_EQ(redis::RedisClient(server.client_options()).command({"GET", "k"}).as_string(), "v");
}

TEST(RedisServerTest, KeepDirLeavesTheAofForPostMortems) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  std::filesystem::path dir;
  {
    RedisServerOptions keep;
    keep.keep_dir = true;
    RedisServer server(keep);
    dir = server.dir();
  }
  EXPECT_TRUE(std::filesystem::exists(dir / "redis.log"));
  std::filesystem::remove_all(dir);
}

TEST(RedisServerTest, BadArgumentsFailWithTheLog) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  try {
    RedisServerOptions bad;
    bad.extra_args = {"--no-such-option", "1"};
    RedisServer server(bad);
    FAIL() << "expected RedisServerError";
  } catch (const RedisServerError& e) {
    EXPECT_NE(std::string(e.what()).find("exited during start"), std::string::npos) << e.what();
  }
}

TEST(RedisServerTest, MissingExecutableIsReported) {
  EXPECT_EQ(RedisServer::find_executable("/nonexistent/redis-server"), std::nullopt);
  RedisServerOptions missing;
  missing.executable = "/nonexistent/redis-server";
  EXPECT_THROW(RedisServer{missing}, RedisServerError);
}

}  // namespace
}  // namespace spotlight::testing
