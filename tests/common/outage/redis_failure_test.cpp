// Redis refusing who we are (wrong password, none given) or what we may do (an ACL user without
// the command) is a typed error at every layer the services use, never "unavailable": a service
// must stop with one line instead of retrying for ever. A server that is there but cannot serve
// yet (BUSY here; LOADING after a restart) is "unavailable": services wait for it.
#include <thread>

#include <gtest/gtest.h>

#include "common/outage/failure.hpp"
#include "common/queue/redis_lease_queue.hpp"
#include "common/redis/client.hpp"
#include "common/store/redis_key_value_store.hpp"
#include "common/store/redis_trajectory_store.hpp"
#include "common/store/redis_weight_store.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/wait_for.hpp"

namespace spotlight {
namespace {

testing::RedisServerOptions with_password() {
  testing::RedisServerOptions o;
  o.appendonly = false;
  o.password = "right";
  return o;
}

TEST(AccessDenied, WrongPasswordIsAnAuthErrorInTheClientQueueAndStores) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  testing::RedisServer server(with_password());
  auto wrong = server.client_options();
  wrong.password = "wrong";
  EXPECT_THROW(redis::RedisClient(wrong).ping(), redis::RedisAuthError);
  queue::LeaseQueueOptions q;
  q.key_prefix = "t:explore";
  EXPECT_THROW(queue::RedisLeaseQueue(wrong, q).stats(), queue::QueueAccessDenied);
  EXPECT_THROW(store::RedisKeyValueStore(wrong, "t").get("k"), store::StoreAccessDenied);
  store::WeightStoreOptions w;
  w.key_prefix = "t";
  EXPECT_THROW(store::RedisWeightStore(wrong, w).latest_version(), store::StoreAccessDenied);
}

TEST(AccessDenied, NoPasswordWhereOneIsRequiredIsAnAuthError) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  testing::RedisServer server(with_password());
  auto anonymous = server.client_options();
  anonymous.password.reset();
  try {
    queue::LeaseQueueOptions q;
    q.key_prefix = "t:explore";
    queue::RedisLeaseQueue(anonymous, q).result("x");
    FAIL() << "expected QueueAccessDenied";
  } catch (const queue::QueueAccessDenied& e) {
    EXPECT_EQ(outage::classify(e), outage::Failure::kAccessDenied);
    EXPECT_NE(std::string(e.what()).find("NOAUTH"), std::string::npos) << e.what();
  }
}

TEST(AccessDenied, AnAclUserWithoutTheCommandIsAnAuthError) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  testing::RedisServer server(with_password());
  redis::RedisClient(server.client_options())
      .command({"ACL", "SETUSER", "reader", "on", ">reader-pw", "~*", "+get", "+ping"});
  auto reader = server.client_options();
  reader.user = "reader";
  reader.password = "reader-pw";
  store::RedisKeyValueStore kv(reader, "t");
  EXPECT_EQ(kv.get("k"), std::nullopt);                      // allowed
  EXPECT_THROW(kv.put("k", "v"), store::StoreAccessDenied);  // -NOPERM
  // Every store translates the same way, the trajectory store too.
  store::RedisTrajectoryStore trajectories(reader, store::TrajectoryStoreOptions{"t:trajectory"});
  EXPECT_EQ(trajectories.get("task"), std::nullopt);                          // allowed
  EXPECT_THROW(trajectories.put("task", "bytes"), store::StoreAccessDenied);  // -NOPERM
}

TEST(AccessDenied, ARightPasswordWorksAndADownServerIsUnavailableNotDenied) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  testing::RedisServer server(with_password());
  store::RedisKeyValueStore kv(server.client_options(), "t");
  kv.put("k", "v");
  EXPECT_EQ(kv.get("k"), std::optional<std::string>("v"));
  server.kill();
  try {
    kv.get("k");
    FAIL() << "expected StoreUnavailable";
  } catch (const std::exception& e) {
    EXPECT_EQ(outage::classify(e), outage::Failure::kUnavailable) << e.what();
  }
}

TEST(NotReady, ABusyServerIsUnavailableNotAnErrorReply) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  testing::RedisServerOptions options;
  options.appendonly = false;
  options.extra_args = {"--lua-time-limit", "50"};  // BUSY replies after 50 ms of script
  testing::RedisServer server(options);
  std::jthread script([&] {
    try {
      redis::RedisClient(server.client_options())
          .command({"EVAL", "local i = 0 while true do i = i + 1 end", "0"});
    } catch (const std::exception&) {  // killed below, or timed out
    }
  });
  store::RedisKeyValueStore kv(server.client_options(), "t");
  std::string seen;
  EXPECT_TRUE(testing::wait_for(
      [&] {
        try {
          kv.get("k");
        } catch (const std::exception& e) {
          seen = e.what();
          return outage::classify(e) == outage::Failure::kUnavailable &&
                 seen.find("BUSY") != std::string::npos;
        }
        return false;
      },
      std::chrono::seconds(10)))
      << seen;
  redis::RedisClient(server.client_options()).command({"SCRIPT", "KILL"});
  script.join();
  EXPECT_EQ(kv.get("k"), std::nullopt) << "served again once the script is gone";
}

}  // namespace
}  // namespace spotlight
