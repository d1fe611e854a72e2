// Many consumers (threads, one queue object each) against one real redis-server, with holders
// that stall past their lease and a consumer that dies holding leases. Property: every task ends
// with exactly one recorded result and exactly one acknowledgement; nothing is lost.

#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/queue/redis_lease_queue.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/wait_for.hpp"

namespace spotlight::queue {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr int kTasks = 600;
constexpr int kConsumers = 16;
constexpr milliseconds kLeaseTimeout{200};

struct Tally {
  std::map<std::string, int> recorded;        // task -> completions that recorded the result
  std::map<std::string, int> acked;           // task -> completions that acknowledged
  std::map<std::string, std::string> winner;  // task -> result value this consumer recorded
  int duplicates = 0;
};

TEST(LeaseQueueConcurrencyTest, NoTaskLostOrAcknowledgedTwice) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  testing::RedisServerOptions so;
  so.appendfsync = "everysec";
  testing::RedisServer server(so);
  LeaseQueueOptions o;
  o.key_prefix = "concurrency";
  o.lease_timeout = kLeaseTimeout;
  o.max_deliveries = 1000;  // this test is about loss and duplication, not dead letters

  RedisLeaseQueue producer(server.client_options(), o);
  std::vector<Task> tasks;
  for (int i = 0; i < kTasks; ++i)
    tasks.push_back({"t" + std::to_string(i), std::to_string(i)});
  ASSERT_EQ(producer.enqueue_many(tasks), kTasks);

  // A consumer that dies holding leases (never completes, never heartbeats).
  {
    RedisLeaseQueue ghost(server.client_options(), o);
    ASSERT_EQ(ghost.lease("ghost", 10, milliseconds(0)).size(), 10u);
  }

  std::atomic<bool> done{false};
  std::vector<Tally> tallies(kConsumers);
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int c = 0; c < kConsumers; ++c) {
    threads.emplace_back([&, c] {
      const std::string name = "c" + std::to_string(c);
      Tally& tally = tallies[c];
      try {
        RedisLeaseQueue q(server.client_options(), o);
        std::vector<std::pair<Lease, Clock::time_point>> stalled;  // held past the lease timeout
        auto finish = [&](const Lease& l) {
          const Completion r = q.complete(l, "r:" + l.task_id + ":" + name);
          if (r.recorded) {
            ++tally.recorded[l.task_id];
            tally.winner[l.task_id] = "r:" + l.task_id + ":" + name;
          } else {
            ++tally.duplicates;
          }
          if (r.acked) ++tally.acked[l.task_id];
        };
        if (c == 0) {  // the rescuer notices the ghost's missing heartbeats
          for (const auto& l : q.reclaim_from("ghost", name, 100))
            finish(l);
        }
        while (!done.load()) {
          auto leases = q.lease(name, 4, milliseconds(20));
          auto expired = q.reclaim(name, kLeaseTimeout, 4);
          leases.insert(leases.end(), expired.begin(), expired.end());
          for (const auto& l : leases) {
            // Every 7th task stalls on its first delivery: its holder completes it only after
            // the lease expired (and was most likely re-delivered elsewhere).
            if (l.delivery_count == 1 && std::stoi(l.payload) % 7 == 0) {
              stalled.emplace_back(l, Clock::now() + 3 * kLeaseTimeout);
            } else {
              finish(l);
            }
          }
          for (auto it = stalled.begin(); it != stalled.end();) {
            if (Clock::now() >= it->second) {
              finish(it->first);
              it = stalled.erase(it);
            } else {
              ++it;
            }
          }
        }
        for (const auto& [l, when] : stalled)
          finish(l);
      } catch (const std::exception& e) {
        ++errors;
        ADD_FAILURE() << name << ": " << e.what();
      }
    });
  }

  const bool all_done =
      testing::wait_for([&] { return producer.result_count() == kTasks; }, milliseconds(120000));
  done = true;
  for (auto& t : threads)
    t.join();
  ASSERT_TRUE(all_done) << "results: " << producer.result_count() << " of " << kTasks;
  ASSERT_EQ(errors.load(), 0);

  std::map<std::string, int> recorded, acked;
  std::map<std::string, std::string> winner;
  int duplicates = 0;
  for (const auto& t : tallies) {
    for (const auto& [task, n] : t.recorded)
      recorded[task] += n;
    for (const auto& [task, n] : t.acked)
      acked[task] += n;
    for (const auto& [task, value] : t.winner)
      winner[task] = value;
    duplicates += t.duplicates;
  }
  ASSERT_EQ(recorded.size(), static_cast<size_t>(kTasks));
  ASSERT_EQ(acked.size(), static_cast<size_t>(kTasks));
  for (const auto& task : tasks) {
    EXPECT_EQ(recorded[task.task_id], 1) << task.task_id;
    EXPECT_EQ(acked[task.task_id], 1) << task.task_id;
    EXPECT_EQ(producer.result(task.task_id), winner[task.task_id]);
  }
  const QueueStats s = producer.stats();
  EXPECT_EQ(s.length, 0);
  EXPECT_EQ(s.leased, 0);
  EXPECT_EQ(s.dead_letters, 0);
  EXPECT_EQ(s.results, kTasks);
  EXPECT_EQ(s.acked_total, kTasks);
  EXPECT_EQ(s.duplicate_results_total, duplicates);
  EXPECT_GE(s.reclaimed_total, 10) << "the ghost's leases came back";
  std::cout << "[ stats    ] duplicates " << duplicates << ", reclaimed " << s.reclaimed_total
            << ", deliveries " << s.leased_total << "\n";
}

}  // namespace
}  // namespace spotlight::queue
