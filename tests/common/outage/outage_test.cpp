// The outage tracker's states, lines and metrics, the back-off and the retry loop, with an
// in-memory dependency (the transport is covered by the redis and e2e tests).
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/log/log.hpp"
#include "common/metrics/metrics.hpp"
#include "common/outage/backoff.hpp"
#include "common/outage/failure.hpp"
#include "common/outage/retry.hpp"
#include "common/queue/errors.hpp"
#include "common/redis/errors.hpp"
#include "common/store/errors.hpp"

namespace spotlight::outage {
namespace {

using namespace std::chrono_literals;

// Captures the log lines written while it lives.
class CapturedLog {
 public:
  CapturedLog() {
    log::set_sink([this](log::Level, std::string_view line) {
      std::lock_guard lock(mutex_);
      lines_.emplace_back(line);
    });
  }
  ~CapturedLog() { log::set_sink(nullptr); }
  std::vector<std::string> lines() const {
    std::lock_guard lock(mutex_);
    return lines_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Backoff, DoublesFromInitialToTheCapAndResets) {
  Backoff b(BackoffOptions{100ms, 1000ms, 2.0});
  std::vector<long> waits;
  for (int i = 0; i < 6; ++i)
    waits.push_back(static_cast<long>(b.next().count()));
  EXPECT_EQ(waits, (std::vector<long>{100, 200, 400, 800, 1000, 1000}));
  EXPECT_TRUE(b.capped());
  b.reset();
  EXPECT_FALSE(b.capped());
  EXPECT_EQ(b.next(), 100ms);
}

TEST(Classify, TellsUnavailableFromAccessDeniedFromTheRest) {
  EXPECT_EQ(classify(queue::QueueUnavailable("q", false)), Failure::kUnavailable);
  EXPECT_EQ(classify(store::StoreUnavailable("s", true)), Failure::kUnavailable);
  EXPECT_EQ(classify(redis::RedisUnavailable("r", false)), Failure::kUnavailable);
  EXPECT_EQ(classify(queue::QueueAccessDenied("q")), Failure::kAccessDenied);
  EXPECT_EQ(classify(store::StoreAccessDenied("s")), Failure::kAccessDenied);
  EXPECT_EQ(classify(redis::RedisAuthError("AUTH", "WRONGPASS x")), Failure::kAccessDenied);
  EXPECT_EQ(classify(queue::QueueError("q")), Failure::kOther);
  EXPECT_EQ(classify(std::runtime_error("x")), Failure::kOther);
}

TEST(Classify, ReadsTheCodeNotTheType) {
  // A module's base error with a code, and an error of a module classify() has never heard of.
  EXPECT_EQ(classify(store::StoreError("s", error::ErrorCode::kUnavailable, true)),
            Failure::kUnavailable);
  EXPECT_EQ(classify(error::Error("e", error::ErrorCode::kAccessDenied)), Failure::kAccessDenied);
  EXPECT_EQ(classify(store::InvalidStoreOptions("chunk_bytes", "too small")), Failure::kOther);
  EXPECT_EQ(classify(store::ChecksumMismatch(3, "a", "b")), Failure::kOther);
}

TEST(ErrorCode, EachModuleErrorCarriesItsCode) {
  using error::code_of;
  using error::ErrorCode;
  EXPECT_EQ(code_of(redis::RedisUnavailable("r", true)), ErrorCode::kUnavailable);
  EXPECT_TRUE(redis::RedisUnavailable("r", true).is_timeout());
  EXPECT_EQ(code_of(redis::RedisAuthError("GET", "NOPERM x")), ErrorCode::kAccessDenied);
  EXPECT_EQ(code_of(redis::RedisCommandError("GET", "ERR x")), ErrorCode::kOther);
  EXPECT_EQ(code_of(queue::InvalidQueueOptions("group", "must not be empty")), ErrorCode::kInvalid);
  EXPECT_EQ(code_of(store::VersionConflict(1, "a", "b")), ErrorCode::kConflict);
  EXPECT_EQ(code_of(store::UntrustedWeights(1, "unsigned")), ErrorCode::kCorrupt);
  EXPECT_EQ(code_of(std::runtime_error("x")), ErrorCode::kOther);
}

TEST(ErrorCode, TranslationKeepsTheCodeTheTimeoutAndTheMessage) {
  try {
    store::throw_store_error("store key k", redis::RedisUnavailable("redis GET: timed out", true));
  } catch (const store::StoreUnavailable& e) {
    EXPECT_TRUE(e.is_timeout());
    EXPECT_STREQ(e.what(), "store key k: redis GET: timed out");
  }
  EXPECT_THROW(queue::throw_queue_error("q", redis::RedisAuthError("XADD", "NOPERM x")),
               queue::QueueAccessDenied);
  EXPECT_THROW(queue::throw_queue_error("q", redis::RedisCommandError("XADD", "ERR x")),
               queue::QueueError);
}

TEST(OutageTracker, LogsOneLinePerChangeOfStateAndCountsTheOutage) {
  metrics::Registry registry("planner");
  CapturedLog captured;
  OutageTracker tracker("redis", &registry, BackoffOptions{1ms, 8ms, 2.0});
  const queue::QueueUnavailable error("connection refused", false);
  tracker.succeeded();  // up and staying up: nothing to say
  EXPECT_FALSE(tracker.down());
  std::vector<std::chrono::milliseconds> waits;
  for (int i = 0; i < 50; ++i)
    waits.push_back(tracker.failed(error));  // 1, 2, 4, 8, 8, ...
  EXPECT_TRUE(tracker.down());
  EXPECT_EQ(waits.front(), 1ms);
  EXPECT_EQ(waits.back(), 8ms);
  tracker.succeeded();
  tracker.succeeded();
  EXPECT_FALSE(tracker.down());
  EXPECT_EQ(tracker.down_for(), OutageTracker::Clock::duration::zero());

  const auto lines = captured.lines();
  ASSERT_EQ(lines.size(), 3u) << "lost, retrying, restored: not one line per attempt";
  EXPECT_TRUE(contains(lines[0], "redis lost: connection refused")) << lines[0];
  EXPECT_TRUE(contains(lines[1], "redis still unavailable")) << lines[1];
  EXPECT_TRUE(contains(lines[1], "(4 attempts)")) << lines[1];
  EXPECT_TRUE(contains(lines[2], "redis restored after")) << lines[2];
  EXPECT_TRUE(contains(lines[2], "50 failed attempts")) << lines[2];

  const std::string text = registry.text();
  EXPECT_TRUE(contains(text, "spotlight_planner_redis_up 1")) << text;
  EXPECT_TRUE(contains(text, "spotlight_planner_redis_outages_total 1")) << text;
  EXPECT_TRUE(contains(text, "spotlight_planner_redis_outage_seconds 0")) << text;
  EXPECT_TRUE(contains(text, "spotlight_planner_redis_outage_seconds_total")) << text;

  // A second outage starts over: lost again, back-off from the initial value.
  EXPECT_EQ(tracker.failed(error), 1ms);
  EXPECT_EQ(tracker.outages(), 2u);
  EXPECT_TRUE(contains(registry.text(), "spotlight_planner_redis_up 0"));
  EXPECT_EQ(captured.lines().size(), 4u);
}

TEST(Retry, RetriesWhileUnavailableThenReturnsTheResult) {
  OutageTracker tracker("redis", nullptr, BackoffOptions{1ms, 2ms, 2.0});
  int calls = 0;
  const int value = retry(tracker, RetryOptions{}, [&] {
    if (++calls < 5) throw store::StoreUnavailable("down", false);
    return 42;
  });
  EXPECT_EQ(value, 42);
  EXPECT_EQ(calls, 5);
  EXPECT_FALSE(tracker.down());
  EXPECT_EQ(tracker.outages(), 1u);
}

TEST(Retry, OtherErrorsAndAccessDeniedPropagateAtOnce) {
  OutageTracker tracker("redis", nullptr, BackoffOptions{1ms, 2ms, 2.0});
  int calls = 0;
  EXPECT_THROW(retry(tracker, RetryOptions{},
                     [&] {
                       ++calls;
                       throw queue::QueueAccessDenied("WRONGPASS");
                     }),
               queue::QueueAccessDenied);
  EXPECT_THROW(retry(tracker, RetryOptions{},
                     [&] {
                       ++calls;
                       throw std::logic_error("bug");
                     }),
               std::logic_error);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(tracker.outages(), 0u);
}

TEST(Retry, GivesUpAfterTheOutageLimit) {
  OutageTracker tracker("redis", nullptr, BackoffOptions{5ms, 10ms, 2.0});
  const auto start = std::chrono::steady_clock::now();
  try {
    retry(tracker, RetryOptions{50ms, {}}, [] { throw queue::QueueUnavailable("refused", false); });
    FAIL() << "expected OutageLimitExceeded";
  } catch (const OutageLimitExceeded& e) {
    EXPECT_GE(e.lasted(), 50ms);
    EXPECT_TRUE(contains(e.what(), "redis unavailable for")) << e.what();
    EXPECT_TRUE(contains(e.what(), "refused")) << e.what();
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
}

TEST(Retry, AStopRequestEndsTheWaitAtOnce) {
  OutageTracker tracker("redis", nullptr, BackoffOptions{60s, 60s, 2.0});
  std::stop_source stop;
  std::atomic<bool> called{false};
  std::jthread stopper([&] {
    while (!called)
      std::this_thread::yield();
    stop.request_stop();
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(retry(tracker, RetryOptions{0ms, stop.get_token()},
                     [&]() -> int {
                       called = true;
                       throw queue::QueueUnavailable("refused", false);
                     }),
               RetryStopped);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s) << "waited out the 60 s back-off";
}

}  // namespace
}  // namespace spotlight::outage
