// How the trainer waits for explored seeds, against a real redis-server: AsyncSeedSource sleeps on
// the queue's result bell (rung by complete() in the script that records a result) and reads the
// missing results in one batch when it rings; a result that rang no bell (a lost wake-up) is
// still read within the resync interval.
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "common/log/log.hpp"
#include "common/queue/redis_lease_queue.hpp"
#include "common/redis/client.hpp"
#include "common/run/run_keys.hpp"
#include "common/run/run_state.hpp"
#include "common/run/schedule.hpp"
#include "common/store/redis_key_value_store.hpp"
#include "common/wire/messages.hpp"
#include "services/trainer/async_exploration.hpp"
#include "tests/support/log_capture.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/wait_for.hpp"

namespace spotlight::trainer {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kPrompts = 2;
constexpr int kCandidates = 3;
constexpr int kGroup = 2;
constexpr std::int64_t kIteration = 1;
constexpr std::uint64_t kRunSeed = 5;
const std::string kRunId = "wait";

class AsyncWaitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SPOTLIGHT_REQUIRE_REDIS_SERVER();
    server_ = std::make_unique<spotlight::testing::RedisServer>();
    options_.key_prefix = run::RunKeys(kRunId).explore_queue;
    queue_ = std::make_unique<queue::RedisLeaseQueue>(server_->client_options(), options_);
  }

  AsyncSeedOptions options(std::chrono::milliseconds resync) const {
    AsyncSeedOptions o;
    o.run_id = kRunId;
    o.group_size = kGroup;
    o.candidates = kCandidates;
    o.run_seed = kRunSeed;
    o.max_wait = 60s;
    o.resync = resync;
    return o;
  }

  static std::string result_of(const std::string& task_id) {
    const auto id = run::parse_seed_task_id(task_id);
    wire::SeedResult r;
    r.task_id = task_id;
    r.run_id = kRunId;
    r.iteration = kIteration;
    r.prompt_index = id->prompt;
    r.seed = run::candidate_seed(kRunSeed, kIteration, id->prompt, id->candidate);
    r.weights_version_used = 0;
    r.reward = 0.25 * id->candidate;
    return r.encode();
  }

  // True once some connection is blocked in BLPOP (the trainer's wait on the bell).
  bool trainer_waits_on_bell() {
    redis::RedisClient admin(server_->client_options());
    return admin.command({"CLIENT", "LIST"}).as_string().find("cmd=blpop") != std::string::npos;
  }

  // select() on its own thread; returns its selection and how long it took.
  std::pair<SeedSelection, double> select_async(AsyncSeedOptions o,
                                                const std::function<void()>& while_waiting) {
    queue::RedisLeaseQueue trainer_queue(server_->client_options(), options_);
    AsyncSeedSource source(std::move(o), trainer_queue);
    SeedSelection selection;
    const auto start = Clock::now();
    std::thread trainer(
        [&] { selection = source.select(kIteration, std::vector<task::Prompt>(kPrompts)); });
    while_waiting();
    trainer.join();
    return {selection, std::chrono::duration<double>(Clock::now() - start).count()};
  }

  queue::LeaseQueueOptions options_;
  std::unique_ptr<spotlight::testing::RedisServer> server_;
  std::unique_ptr<queue::RedisLeaseQueue> queue_;
};

TEST_F(AsyncWaitTest, WakesOnTheResultBellInsteadOfWaitingForTheResync) {
  for (int i = 0; i < kPrompts; ++i) {
    for (int j = 0; j < kCandidates; ++j)
      queue_->enqueue(run::seed_task_id(kIteration, i, j), "task");
  }
  constexpr auto kResync = 20s;  // far longer than the test may take when the bell works
  const auto [selection, seconds] = select_async(options(kResync), [&] {
    ASSERT_TRUE(spotlight::testing::wait_for([&] { return trainer_waits_on_bell(); }, 10s));
    for (const auto& lease : queue_->lease("explorer", kPrompts * kCandidates, 0ms)) {
      EXPECT_TRUE(queue_->complete(lease, result_of(lease.task_id)).recorded);
    }
  });
  EXPECT_LT(seconds, std::chrono::duration<double>(kResync).count());
  EXPECT_EQ(selection.fallback_prompts, 0);
  ASSERT_EQ(selection.candidate_rewards.size(), static_cast<std::size_t>(kPrompts));
  for (const auto& rewards : selection.candidate_rewards)
    EXPECT_EQ(rewards.size(), static_cast<std::size_t>(kCandidates));
}

TEST_F(AsyncWaitTest, AResultThatRangNoBellIsReadAtTheNextResync) {
  const auto [selection, seconds] = select_async(options(200ms), [&] {
    ASSERT_TRUE(spotlight::testing::wait_for([&] { return trainer_waits_on_bell(); }, 10s));
    // Results written behind the queue's back: no bell rings (a lost wake-up).
    redis::RedisClient writer(server_->client_options());
    const std::string results = options_.key_prefix + ":" + options_.results;
    for (int i = 0; i < kPrompts; ++i) {
      for (int j = 0; j < kCandidates; ++j) {
        const std::string id = run::seed_task_id(kIteration, i, j);
        writer.command({"HSET", results, id, result_of(id)});
      }
    }
  });
  EXPECT_LT(seconds, 30.0);  // max_wait is 60 s: the resync, not the deadline, found them
  EXPECT_EQ(selection.fallback_prompts, 0);
  for (const auto& rewards : selection.candidate_rewards)
    EXPECT_EQ(rewards.size(), static_cast<std::size_t>(kCandidates));
}

// Candidates an explorer rejected or that failed past max_deliveries never get a result: the wait
// counts them lost as dead-lettered and ends once nothing else is missing. max_wait is far above
// the test's CTest TIMEOUT (300 s), so a wait that ignored them would time the test out.
TEST_F(AsyncWaitTest, DeadLetteredCandidatesAreLostInsteadOfWaitedFor) {
  for (int i = 0; i < kPrompts; ++i) {
    for (int j = 0; j < kCandidates; ++j)
      queue_->enqueue(run::seed_task_id(kIteration, i, j), "task");
  }
  auto o = options(1s);
  o.max_wait = std::chrono::hours(1);
  queue::LeaseQueueOptions one_delivery = options_;
  one_delivery.max_deliveries = 1;  // an explorer whose first failure dead-letters the task
  queue::RedisLeaseQueue explorer(server_->client_options(), one_delivery);
  const std::string rejected = run::seed_task_id(kIteration, 1, 1);
  const std::string failed = run::seed_task_id(kIteration, 1, 2);
  const auto [selection, seconds] = select_async(o, [&] {
    ASSERT_TRUE(spotlight::testing::wait_for([&] { return trainer_waits_on_bell(); }, 10s));
    for (const auto& lease : explorer.lease("explorer", kPrompts * kCandidates, 0ms)) {
      if (lease.task_id == rejected) {
        EXPECT_EQ(explorer.reject(lease, "outside the run's limits"),
                  queue::FailOutcome::kDeadLettered);
      } else if (lease.task_id == failed) {
        EXPECT_EQ(explorer.fail(lease, "sampler crashed"), queue::FailOutcome::kDeadLettered);
      } else {
        EXPECT_TRUE(explorer.complete(lease, result_of(lease.task_id)).recorded);
      }
    }
  });
  EXPECT_EQ(selection.dead_lettered_tasks, 2);
  EXPECT_EQ(selection.lost_tasks, 0);  // lost to quarantines: none
  ASSERT_EQ(selection.candidate_rewards.size(), static_cast<std::size_t>(kPrompts));
  EXPECT_EQ(selection.candidate_rewards[0].size(), static_cast<std::size_t>(kCandidates));
  EXPECT_EQ(selection.candidate_rewards[1].size(), 1u);  // two of three dead-lettered
  EXPECT_EQ(selection.fallback_prompts, 1);              // fewer than G = 2 explored
}

// A trainer waiting longer than its last iteration (max_wait / 2 for the first) for explored seeds
// says why, once per iteration: the planner never planned the iteration; it did, but no explorer
// leases its tasks; it did, and none of its tasks is in the queue any more.
TEST_F(AsyncWaitTest, AWaitLongerThanTheLastIterationSaysWhyOnce) {
  const run::RunKeys keys(kRunId);
  store::RedisKeyValueStore kv(server_->client_options(), keys.prefix);
  run::RunState state(kv, keys);
  auto o = options(100ms);
  o.max_wait = 1s;
  queue::RedisLeaseQueue trainer_queue(server_->client_options(), options_);
  AsyncSeedSource source(o, trainer_queue, &state);
  const std::vector<task::Prompt> prompts(kPrompts);
  const auto plan = [&](std::int64_t t) {
    state.put_plan_if_absent({.iteration = t, .candidates = kCandidates, .steps = 4});
    state.put_planner_progress({.enqueued_through = t, .unix_ms = 1});
  };
  testing::LogCapture lines(log::Level::kWarn);

  source.select(kIteration, prompts);  // nothing planned
  EXPECT_EQ(lines.count("because of no planner progress: no plan record"), 1u);

  plan(kIteration + 1);
  for (int i = 0; i < kPrompts; ++i) {
    for (int j = 0; j < kCandidates; ++j)
      queue_->enqueue(run::seed_task_id(kIteration + 1, i, j), "task");
  }
  source.select(kIteration + 1, prompts);  // planned and enqueued, no explorer
  EXPECT_EQ(lines.count("because of no explorers: 6 tasks wait"), 1u);

  queue_->destroy();  // the tasks are gone
  plan(kIteration + 2);
  source.select(kIteration + 2, prompts);
  EXPECT_EQ(lines.count("because of an empty queue: none of the 6 missing tasks"), 1u);
  EXPECT_EQ(lines.count("longer than the last iteration"), 3u) << "once per iteration";
}

TEST_F(AsyncWaitTest, WithoutNoticesItPollsAsBefore) {
  auto o = options(20s);
  o.notices = false;  // main's behaviour before the bell: re-read every `poll`
  o.poll = 10ms;
  const auto [selection, seconds] = select_async(o, [&] {
    redis::RedisClient writer(server_->client_options());
    const std::string results = options_.key_prefix + ":" + options_.results;
    for (int i = 0; i < kPrompts; ++i) {
      for (int j = 0; j < kCandidates; ++j) {
        const std::string id = run::seed_task_id(kIteration, i, j);
        writer.command({"HSET", results, id, result_of(id)});
      }
    }
  });
  EXPECT_LT(seconds, 20.0);
  EXPECT_FALSE(trainer_waits_on_bell());
  EXPECT_EQ(selection.fallback_prompts, 0);
}

}  // namespace
}  // namespace spotlight::trainer
