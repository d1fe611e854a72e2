// The Lua scripts built into the queue and the weight store (cmake/EmbedLua.cmake): each built-in
// text is its .lua files as they are in the checkout, names its KEYS and ARGV, and compiles in a
// real redis-server (SCRIPT LOAD).

#include "common/queue/lua_scripts.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "common/redis/client.hpp"
#include "common/redis/embedded_script.hpp"
#include "common/store/lua_scripts.hpp"
#include "tests/support/redis_server.hpp"

namespace spotlight {
namespace {

using redis::EmbeddedScript;

std::vector<EmbeddedScript> all_scripts() {
  std::vector<EmbeddedScript> all(queue::lua::kAll.begin(), queue::lua::kAll.end());
  all.insert(all.end(), store::lua::kAll.begin(), store::lua::kAll.end());
  return all;
}

std::string read_source(std::string_view relative) {
  const char* root = std::getenv("SPOTLIGHT_SOURCE_DIR");
  if (root == nullptr) throw std::runtime_error("SPOTLIGHT_SOURCE_DIR is not set");
  const std::filesystem::path path = std::filesystem::path(root) / relative;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(LuaScripts, EveryQueueAndStoreScriptIsBuiltIn) {
  EXPECT_EQ(queue::lua::kAll.size(), 13u);
  EXPECT_EQ(store::lua::kAll.size(), 1u);
  for (const EmbeddedScript& s : all_scripts()) {
    SCOPED_TRACE(std::string(s.name));
    ASSERT_FALSE(s.files.empty());
    EXPECT_EQ(std::filesystem::path(s.files.back()).filename().string(),
              std::string(s.name) + ".lua");
  }
}

TEST(LuaScripts, TextIsItsFilesAsCheckedOut) {
  for (const EmbeddedScript& s : all_scripts()) {
    SCOPED_TRACE(std::string(s.name));
    std::string expected;
    for (std::string_view file : s.files)
      expected += read_source(file);
    EXPECT_EQ(s.text, expected);
  }
}

TEST(LuaScripts, SharedFragmentsAreWrittenOnce) {
  // The reclaim scripts share their re-delivery and dead-letter logic through lib/, not by copy.
  for (const EmbeddedScript* s :
       {&queue::lua::kReclaim, &queue::lua::kReclaimFrom, &queue::lua::kFail}) {
    SCOPED_TRACE(std::string(s->name));
    ASSERT_EQ(s->files.size(), 3u);
    EXPECT_EQ(s->files[0], "common/queue/lua/lib/stream.lua");
    EXPECT_EQ(s->files[1], "common/queue/lua/lib/dead_letter.lua");
    const std::string own = read_source(s->files.back());
    EXPECT_EQ(own.find("local function"), std::string::npos) << "defines what lib/ should hold";
  }
}

TEST(LuaScripts, EachNamesItsKeysAndArguments) {
  for (const EmbeddedScript& s : all_scripts()) {
    SCOPED_TRACE(std::string(s.name));
    const std::string own = read_source(s.files.back());
    EXPECT_NE(own.find("\n-- KEYS: "), std::string::npos);
    EXPECT_NE(own.find("\n-- ARGV: "), std::string::npos);
  }
}

TEST(LuaScripts, EachLoadsInRedis) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  testing::RedisServer server;
  redis::RedisClient client(server.client_options());
  for (const EmbeddedScript& s : all_scripts()) {
    SCOPED_TRACE(std::string(s.name));
    EXPECT_NO_THROW({
      const std::string sha = client.command({"SCRIPT", "LOAD", s.text}).as_string();
      EXPECT_EQ(sha.size(), 40u);
    });
  }
  // The check can fail: a script that does not compile is refused.
  EXPECT_THROW(client.command({"SCRIPT", "LOAD", "local x = "}), redis::RedisCommandError);
}

}  // namespace
}  // namespace spotlight
