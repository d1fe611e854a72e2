#include <chrono>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "common/bus/publisher.hpp"
#include "common/bus/subscriber.hpp"
#include "common/bus/versioned_follower.hpp"

namespace spotlight::bus {
namespace {

using namespace std::chrono_literals;

constexpr auto kLong = 5s;

// Stands in for Redis: the durable copy of each topic's latest state.
class FakeStore {
 public:
  void put(const std::string& topic, std::uint64_t version, const std::string& payload) {
    std::lock_guard lock(mutex_);
    state_[topic] = Notice{topic, version, payload};
  }
  std::optional<Notice> get(const std::string& topic) {
    std::lock_guard lock(mutex_);
    ++reads_;
    if (failures_left_ > 0) {
      --failures_left_;
      throw std::runtime_error("store unreachable");
    }
    const auto it = state_.find(topic);
    if (it == state_.end()) return std::nullopt;
    return it->second;
  }
  void fail_next(int n) {
    std::lock_guard lock(mutex_);
    failures_left_ = n;
  }
  int reads() {
    std::lock_guard lock(mutex_);
    return reads_;
  }
  SnapshotFn snapshot_fn() {
    return [this](const std::string& topic) { return get(topic); };
  }

 private:
  std::mutex mutex_;
  std::map<std::string, Notice> state_;
  int reads_ = 0;
  int failures_left_ = 0;
};

// A writer that follows the contract: durable first, then the notice.
struct Writer {
  Publisher& pub;
  FakeStore& store;
  void write(const std::string& topic, std::uint64_t version, const std::string& payload) {
    store.put(topic, version, payload);
    pub.publish(topic, version, payload);
  }
};

class FollowerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    endpoint_ = pub_.bind("tcp://127.0.0.1:*");
    sub_.connect(endpoint_);
  }

  FollowerOptions slow_resync() {
    FollowerOptions o;
    o.resync_interval = 60s;  // only gaps and start() read the snapshot
    return o;
  }

  Publisher pub_;
  Subscriber sub_;
  FakeStore store_;
  Writer writer_{pub_, store_};
  std::string endpoint_;
};

TEST_F(FollowerTest, LateJoinerGetsTheSnapshotThenFollowsUpdates) {
  // Versions 1..3 were announced before the follower existed: their notices are gone.
  for (std::uint64_t v = 1; v <= 3; ++v)
    writer_.write("weights", v, "w" + std::to_string(v));

  VersionedFollower follower(sub_, {"weights"}, store_.snapshot_fn(), slow_resync());
  ASSERT_TRUE(follower.start(kLong));
  auto n = follower.next(kLong);
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(*n, (Notice{"weights", 3, "w3"}));
  EXPECT_EQ(follower.counters().from_snapshot, 1u);

  writer_.write("weights", 4, "w4");
  writer_.write("weights", 5, "w5");
  n = follower.next(kLong);
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(*n, (Notice{"weights", 4, "w4"}));
  n = follower.next(kLong);
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(*n, (Notice{"weights", 5, "w5"}));
  EXPECT_EQ(follower.version("weights"), 5u);
  EXPECT_EQ(follower.counters().gaps, 0u);
  EXPECT_EQ(follower.counters().delivered, 3u);
}

TEST_F(FollowerTest, GapResyncsFromTheSnapshot) {
  store_.put("weights", 1, "w1");  // state from before the follower (no notice to race with)
  VersionedFollower follower(sub_, {"weights"}, store_.snapshot_fn(), slow_resync());
  ASSERT_TRUE(follower.start(kLong));
  ASSERT_EQ(follower.next(kLong)->version, 1u);
  const int reads_before = store_.reads();

  // The writer went on to v5 durably; the notices of v2..v5 were lost and the notice of v3
  // arrives late. v3 skips v2: a gap, so the follower reads the snapshot and jumps to v5.
  for (std::uint64_t v = 2; v <= 5; ++v)
    store_.put("weights", v, "w" + std::to_string(v));
  pub_.publish("weights", 3, "w3");
  auto n = follower.next(kLong);
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(*n, (Notice{"weights", 5, "w5"}));
  EXPECT_EQ(follower.counters().gaps, 1u);
  EXPECT_EQ(store_.reads(), reads_before + 1);

  // A late v4 is stale now; v6 follows in order.
  pub_.publish("weights", 4, "w4");
  writer_.write("weights", 6, "w6");
  n = follower.next(kLong);
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(*n, (Notice{"weights", 6, "w6"}));
  EXPECT_EQ(follower.counters().stale, 1u);
}

TEST_F(FollowerTest, GapWithoutANewerSnapshotDeliversTheNotice) {
  VersionedFollower follower(sub_, {"events"}, store_.snapshot_fn(), slow_resync());
  ASSERT_TRUE(follower.start(kLong));  // empty store: version 0
  // The store lags (a replica, say): the notice itself is the newest state.
  store_.put("events", 1, "e1");
  pub_.publish("events", 4, "e4");
  const auto n = follower.next(kLong);
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(*n, (Notice{"events", 4, "e4"}));
  EXPECT_EQ(follower.counters().gaps, 1u);
}

TEST_F(FollowerTest, DuplicatesAndStaleVersionsAreIgnored) {
  store_.put("weights", 2, "w2");
  VersionedFollower follower(sub_, {"weights"}, store_.snapshot_fn(), slow_resync());
  ASSERT_TRUE(follower.start(kLong));
  ASSERT_EQ(follower.next(kLong)->version, 2u);

  pub_.publish("weights", 1, "old");
  pub_.publish("weights", 2, "dup");
  pub_.publish("weights", 2, "dup");
  writer_.write("weights", 3, "w3");
  pub_.publish("weights", 3, "dup");
  writer_.write("weights", 4, "w4");  // sentinel: everything before it has been seen

  std::vector<Notice> got;
  while (got.empty() || got.back().version < 4) {
    auto n = follower.next(kLong);
    ASSERT_TRUE(n.has_value());
    got.push_back(*n);
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], (Notice{"weights", 3, "w3"}));
  EXPECT_EQ(got[1], (Notice{"weights", 4, "w4"}));
  EXPECT_EQ(follower.counters().stale, 4u);
  EXPECT_EQ(follower.counters().gaps, 0u);
}

// The last notice was lost and nothing else comes: the resync interval finds the new state.
TEST_F(FollowerTest, QuietTopicResyncsAfterTheInterval) {
  writer_.write("weights", 1, "w1");
  FollowerOptions options;
  options.resync_interval = 200ms;
  VersionedFollower follower(sub_, {"weights"}, store_.snapshot_fn(), options);
  ASSERT_TRUE(follower.start(kLong));
  ASSERT_EQ(follower.next(kLong)->version, 1u);

  const auto lost_at = std::chrono::steady_clock::now();
  store_.put("weights", 2, "w2");  // no notice
  const auto n = follower.next(kLong);
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(*n, (Notice{"weights", 2, "w2"}));
  EXPECT_GE(std::chrono::steady_clock::now() - lost_at, 150ms);  // found by the timer
  EXPECT_EQ(follower.counters().from_snapshot, 2u);
}

TEST_F(FollowerTest, NothingNewMeansNothingDelivered) {
  writer_.write("weights", 1, "w1");
  FollowerOptions options;
  options.resync_interval = 20ms;
  VersionedFollower follower(sub_, {"weights"}, store_.snapshot_fn(), options);
  ASSERT_TRUE(follower.start(kLong));
  ASSERT_EQ(follower.next(kLong)->version, 1u);
  EXPECT_FALSE(follower.next(150ms).has_value());
  EXPECT_GE(follower.counters().resyncs, 3u);  // the timer did re-read, found nothing newer
  EXPECT_EQ(follower.counters().delivered, 1u);
}

TEST_F(FollowerTest, SnapshotFailuresPropagateAndAreRetried) {
  writer_.write("weights", 3, "w3");
  VersionedFollower follower(sub_, {"weights"}, store_.snapshot_fn(), slow_resync());
  store_.fail_next(1);
  EXPECT_THROW(follower.start(kLong), std::runtime_error);
  const auto n = follower.next(kLong);  // retries the snapshot
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(*n, (Notice{"weights", 3, "w3"}));
  EXPECT_EQ(follower.counters().snapshot_errors, 1u);
}

TEST_F(FollowerTest, FollowsSeveralTopicsIndependently) {
  writer_.write("weights", 10, "w10");
  VersionedFollower follower(sub_, {"weights", "events"}, store_.snapshot_fn(), slow_resync());
  ASSERT_TRUE(follower.start(kLong));
  ASSERT_EQ(follower.next(kLong)->version, 10u);
  writer_.write("events", 1, "e1");
  writer_.write("weights", 11, "w11");
  std::map<std::string, std::uint64_t> got;
  for (int i = 0; i < 2; ++i) {
    const auto n = follower.next(kLong);
    ASSERT_TRUE(n.has_value());
    got[n->topic] = n->version;
  }
  EXPECT_EQ(got["events"], 1u);
  EXPECT_EQ(got["weights"], 11u);
  EXPECT_EQ(follower.counters().gaps, 0u);
}

}  // namespace
}  // namespace spotlight::bus
