// The explorer's weights prefetch against a real redis-server and real ZeroMQ sockets: the test
// plays the trainer (weight store + "weights" notices on a bus::Publisher), the prefetcher runs
// on its own thread and connection and loads each new version into a micro-preset policy. Lost
// notices and a prefetcher that joined late are caught up from Redis; a batch in progress defers
// the load, never the other way round; a notice naming other weights loads nothing.
#include "services/explorer/weights_prefetch.hpp"

#include <chrono>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "common/bus/publisher.hpp"
#include "common/metrics/metrics.hpp"
#include "common/policy/policy.hpp"
#include "common/run/run_keys.hpp"
#include "common/store/redis_weight_store.hpp"
#include "common/wire/messages.hpp"
#include "services/explorer/explorer_metrics.hpp"
#include "services/explorer/policy_weights.hpp"
#include "tests/services/explorer/explorer_test_support.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/wait_for.hpp"

namespace spotlight::explorer {
namespace {

using namespace std::chrono_literals;
using spotlight::testing::wait_for;

constexpr auto kWait = 30s;  // bound on conditions that should hold quickly
const run::RunKeys kKeys("prefetch-test");

class WeightsPrefetchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SPOTLIGHT_REQUIRE_REDIS_SERVER();
    server_ = std::make_unique<spotlight::testing::RedisServer>();
    trainer_store_ = make_store();
    prefetch_store_ = make_store();
    endpoint_ = bus_.bind("tcp://127.0.0.1:*");
    policy_ = testing::micro_policy(1);
    owner_store_ = make_store();  // the explorer thread's (PolicyWeights::ensure)
    weights_ = std::make_unique<PolicyWeights>(*owner_store_, *policy_, metrics_);
  }
  void TearDown() override {
    prefetcher_.reset();  // before what its thread uses
  }

  std::unique_ptr<store::RedisWeightStore> make_store() {
    return std::make_unique<store::RedisWeightStore>(server_->client_options(),
                                                     store::WeightStoreOptions{kKeys.prefix});
  }
  void start(std::chrono::milliseconds resync) {
    run::BusSubscription bus;
    bus.endpoint = endpoint_;
    bus.follower.follower.resync_interval = resync;
    bus.follower.tick = 20ms;
    prefetcher_ = std::make_unique<WeightsPrefetcher>(bus, *prefetch_store_, *weights_);
  }

  // Publishes version v (durable first); `notify`: then the notice, as the trainer does.
  std::string publish(std::int64_t v, bool notify = true) {
    const std::string bytes =
        testing::micro_policy(100 + static_cast<std::uint64_t>(v))->weights_bytes();
    const auto m = trainer_store_->publish(v, bytes);
    if (notify) {
      const wire::WeightsNotice n{v, m.checksum, kKeys.weights, static_cast<std::int64_t>(m.bytes),
                                  m.published_unix_ms};
      bus_.publish("weights", static_cast<std::uint64_t>(v) + 1, n.encode());
    }
    return m.checksum;
  }

  bool loads(std::int64_t v) {
    return wait_for([&] { return weights_->loaded() == v; }, kWait);
  }

  std::unique_ptr<spotlight::testing::RedisServer> server_;
  std::unique_ptr<store::RedisWeightStore> trainer_store_, prefetch_store_, owner_store_;
  bus::Publisher bus_;
  std::string endpoint_;
  metrics::Registry registry_{"explorer"};
  ExplorerMetrics metrics_{registry_};
  std::unique_ptr<policy::Policy> policy_;
  std::unique_ptr<PolicyWeights> weights_;
  std::unique_ptr<WeightsPrefetcher> prefetcher_;
};

TEST_F(WeightsPrefetchTest, LoadsEachNewVersionOnItsNoticeVerified) {
  start(60s);  // no resync during the test: the notices do it
  ASSERT_TRUE(bus_.wait_for_subscriber("weights", kWait));
  for (std::int64_t v = 0; v < 3; ++v) {
    const std::string checksum = publish(v);
    ASSERT_TRUE(loads(v)) << "version " << v;
    const auto pinned = weights_->pin();  // the checksum is the pinning owner's to read
    EXPECT_EQ(weights_->loaded_checksum(), checksum);  // of the bytes it loaded
  }
  EXPECT_EQ(policy_->weights_bytes(), testing::micro_policy(102)->weights_bytes());
  EXPECT_EQ(prefetcher_->counters().loaded, 3u);
  EXPECT_EQ(metrics_.weights_prefetched.value(), 3.0);
  // The first task that needs v2 finds it: nothing to fetch.
  const auto pinned = weights_->pin();
  EXPECT_EQ(weights_->ensure(2), 2);
  EXPECT_EQ(metrics_.weights_loaded.value(), 3.0);
}

TEST_F(WeightsPrefetchTest, ALateJoinerAndLostNoticesAreCaughtUpFromRedis) {
  for (std::int64_t v = 0; v < 3; ++v)
    publish(v);  // notices sent before the prefetcher existed: lost
  start(100ms);
  ASSERT_TRUE(loads(2));         // the snapshot at start
  publish(3, /*notify=*/false);  // a trainer that died between the weights and the notice
  ASSERT_TRUE(loads(3));         // the resync
  EXPECT_EQ(policy_->weights_bytes(), testing::micro_policy(103)->weights_bytes());
}

TEST_F(WeightsPrefetchTest, ABatchInProgressDefersTheLoadNotTheBatch) {
  start(60s);
  ASSERT_TRUE(bus_.wait_for_subscriber("weights", kWait));
  publish(0);
  ASSERT_TRUE(loads(0));
  {
    const auto pinned = weights_->pin();  // the explorer's batch
    publish(1);
    ASSERT_TRUE(wait_for([&] { return prefetcher_->counters().notices >= 2; }, kWait));
    // The prefetcher has fetched and verified v1 and waits for the pin; the batch keeps v0.
    EXPECT_EQ(weights_->loaded(), 0);
    EXPECT_EQ(weights_->ensure(0), 0);  // the owner is never blocked by the prefetcher
  }
  ASSERT_TRUE(loads(1));  // right after the batch
}

TEST_F(WeightsPrefetchTest, ANoticeNamingOtherWeightsLoadsNothing) {
  start(60s);
  ASSERT_TRUE(bus_.wait_for_subscriber("weights", kWait));
  publish(0);
  ASSERT_TRUE(loads(0));
  // Version 1 exists in this run's store, but the notice names another checksum (another run's
  // trainer on the same endpoint): not loaded on its word.
  const auto m = trainer_store_->publish(1, testing::micro_policy(101)->weights_bytes());
  const wire::WeightsNotice other{1, std::string(16, '0'), kKeys.weights,
                                  static_cast<std::int64_t>(m.bytes), m.published_unix_ms};
  bus_.publish("weights", 2, other.encode());
  ASSERT_TRUE(wait_for([&] { return prefetcher_->counters().ignored >= 1; }, kWait));
  EXPECT_EQ(weights_->loaded(), 0);
  EXPECT_EQ(prefetcher_->counters().loaded, 1u);
}

}  // namespace
}  // namespace spotlight::explorer
