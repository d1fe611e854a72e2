// FollowerThread over real ZeroMQ sockets (tcp://127.0.0.1:*): it hands states to its callback on
// its own thread, wakes waiters, and recovers from the snapshot source whatever the bus lost: a
// follower that joined late, notices never sent, a publisher that restarted.
#include "common/bus/follower_thread.hpp"

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/bus/errors.hpp"
#include "common/bus/publisher.hpp"

namespace spotlight::bus {
namespace {

using namespace std::chrono_literals;

constexpr auto kLong = 10s;  // bound on conditions that should hold quickly

// Stands in for Redis: the durable copy of each topic's latest state.
class Store {
 public:
  void put(const std::string& topic, std::uint64_t version, const std::string& payload) {
    std::lock_guard lock(mutex_);
    state_[topic] = Notice{topic, version, payload};
  }
  std::optional<Notice> get(const std::string& topic) {
    std::lock_guard lock(mutex_);
    const auto it = state_.find(topic);
    if (it == state_.end()) return std::nullopt;
    return it->second;
  }

 private:
  std::mutex mutex_;
  std::map<std::string, Notice> state_;
};

// What the callback saw, in order.
class Seen {
 public:
  void add(const Notice& n) {
    std::lock_guard lock(mutex_);
    states_.push_back(n);
  }
  std::vector<Notice> states() {
    std::lock_guard lock(mutex_);
    return states_;
  }

 private:
  std::mutex mutex_;
  std::vector<Notice> states_;
};

class FollowerThreadTest : public ::testing::Test {
 protected:
  void SetUp() override { endpoint_ = pub_->bind("tcp://127.0.0.1:*"); }

  std::unique_ptr<FollowerThread> follow(std::chrono::milliseconds resync,
                                         SubscriberOptions sub = {}) {
    FollowerThreadOptions o;
    o.follower.resync_interval = resync;
    o.tick = 20ms;
    return std::make_unique<FollowerThread>(
        sub, endpoint_, std::vector<std::string>{"weights"},
        [this](const std::string& topic) { return store_.get(topic); },
        [this](const Notice& n) { seen_.add(n); }, o);
  }

  // Waits until the follower delivered version `v` (or kLong passes); true when it did.
  bool reaches(FollowerThread& f, std::uint64_t v) {
    const auto deadline = std::chrono::steady_clock::now() + kLong;
    std::uint64_t seen = 0;
    for (;;) {
      const auto states = seen_.states();
      if (!states.empty() && states.back().version >= v) return states.back().version == v;
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return false;
      seen = f.wait_newer(seen, std::chrono::ceil<std::chrono::milliseconds>(deadline - now));
    }
  }

  std::unique_ptr<Publisher> pub_ = std::make_unique<Publisher>();
  std::string endpoint_;
  Store store_;
  Seen seen_;
};

TEST_F(FollowerThreadTest, NoticesWakeTheWaiterInVersionOrder) {
  auto f = follow(60s);  // no resync during the test: only notices (and start()) deliver
  ASSERT_TRUE(pub_->wait_for_subscriber("weights", kLong));
  for (std::uint64_t v = 1; v <= 3; ++v) {
    store_.put("weights", v, "w" + std::to_string(v));
    pub_->publish("weights", v, "w" + std::to_string(v));
  }
  ASSERT_TRUE(reaches(*f, 3));
  std::uint64_t last = 0;
  for (const auto& n : seen_.states()) {
    EXPECT_GT(n.version, last);
    EXPECT_EQ(n.payload, "w" + std::to_string(n.version));
    last = n.version;
  }
  EXPECT_EQ(f->counters().errors, 0u);
}

TEST_F(FollowerThreadTest, ALateJoinerStartsFromTheSnapshot) {
  store_.put("weights", 7, "w7");  // its notice went out before anyone listened
  pub_->publish("weights", 7, "w7");
  auto f = follow(60s);
  ASSERT_TRUE(reaches(*f, 7));
  EXPECT_EQ(seen_.states().front(), (Notice{"weights", 7, "w7"}));
}

TEST_F(FollowerThreadTest, StatesWhoseNoticesNeverCameArriveByResync) {
  auto f = follow(100ms);
  ASSERT_TRUE(pub_->wait_for_subscriber("weights", kLong));
  store_.put("weights", 1, "w1");  // durable, but the publisher died before the notice
  ASSERT_TRUE(reaches(*f, 1));
  store_.put("weights", 2, "w2");
  ASSERT_TRUE(reaches(*f, 2));
}

TEST_F(FollowerThreadTest, ARestartedPublisherLosesNothingDurable) {
  auto f = follow(200ms);
  ASSERT_TRUE(pub_->wait_for_subscriber("weights", kLong));
  store_.put("weights", 1, "w1");
  pub_->publish("weights", 1, "w1");
  ASSERT_TRUE(reaches(*f, 1));
  // The trainer restarts on the same endpoint. Meanwhile v2 became durable without a notice.
  pub_.reset();
  store_.put("weights", 2, "w2");
  pub_ = std::make_unique<Publisher>();
  // The old socket may hold the port for a moment after it closed.
  const auto deadline = std::chrono::steady_clock::now() + kLong;
  for (;;) {
    try {
      pub_->bind(endpoint_);
      break;
    } catch (const BusError&) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "cannot bind " << endpoint_;
      std::this_thread::yield();
    }
  }
  ASSERT_TRUE(reaches(*f, 2));                               // the resync
  ASSERT_TRUE(pub_->wait_for_subscriber("weights", kLong));  // the subscriber reconnected
  store_.put("weights", 3, "w3");
  pub_->publish("weights", 3, "w3");
  ASSERT_TRUE(reaches(*f, 3));
}

}  // namespace
}  // namespace spotlight::bus
