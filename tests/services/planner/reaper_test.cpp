// The fast path for hard-killed explorers against a real redis-server: explorers found as
// consumers of the lease queue, judged by their heartbeat keys; a dead one's leases are handed
// back for immediate re-delivery with the delivery count they would have after an expiry.

#include <algorithm>
#include <set>

#include "common/clock/unix_time.hpp"
#include "common/exploration/explorer_reaper.hpp"
#include "common/queue/redis_lease_queue.hpp"
#include "common/store/redis_key_value_store.hpp"
#include "services/planner/planner.hpp"
#include "services/planner/planner_config.hpp"
#include "services/planner/redis_explorer_directory.hpp"
#include "tests/services/planner/planner_fixture.hpp"

namespace spotlight::planner::test {
namespace {

using namespace std::chrono_literals;

std::set<std::string> task_ids(const std::vector<queue::Lease>& leases) {
  std::set<std::string> ids;
  for (const auto& l : leases)
    ids.insert(l.task_id);
  return ids;
}

class ReaperTest : public RedisFixture {
 protected:
  void SetUp() override {
    RedisFixture::SetUp();
    if (IsSkipped()) return;
    config_ = make_config();
    queue_ = std::make_unique<queue::RedisLeaseQueue>(run::redis_options(*config_),
                                                      run::explore_queue_options(*config_));
    directory_ = std::make_unique<RedisExplorerDirectory>(
        run::redis_options(*config_), run::RunKeys(run_id()), run::explore_queue_options(*config_));
    for (int i = 0; i < 12; ++i)
      queue_->enqueue("task-" + std::to_string(i), "payload");
  }

  // The heartbeat an explorer writes (its wire::Heartbeat record in the run's state).
  void heartbeat(const std::string& explorer, std::int64_t unix_ms) {
    store::RedisKeyValueStore kv(run::redis_options(*config_), keys().prefix);
    run::RunState(kv, keys()).put_heartbeat({.explorer_id = explorer, .unix_ms = unix_ms});
  }
  exploration::ExplorerReaper reaper() {
    exploration::ReaperOptions o;
    o.dead_after = 3000ms;
    return exploration::ExplorerReaper(*queue_, *directory_, o);
  }

  std::optional<config::Config> config_;
  std::unique_ptr<queue::RedisLeaseQueue> queue_;
  std::unique_ptr<RedisExplorerDirectory> directory_;
};

TEST_F(ReaperTest, TheDirectoryListsLeaseQueueConsumersWithTheirHeartbeats) {
  EXPECT_TRUE(directory_->explorers().empty());
  queue_->lease("busy", 2, 0ms);
  const auto done = queue_->lease("idle", 1, 0ms);
  ASSERT_EQ(done.size(), 1u);
  queue_->complete(done[0], "result");  // it holds nothing now
  heartbeat("busy", 1234);
  auto seen = directory_->explorers();
  std::sort(seen.begin(), seen.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  EXPECT_EQ(seen,
            (std::vector<exploration::ExplorerSeen>{{"busy", 1234, 2}, {"idle", std::nullopt, 0}}));
}

TEST_F(ReaperTest, HandsBackTheLeasesOfADeadExplorerOnly) {
  const auto dead = queue_->lease("dead", 3, 0ms);
  const auto alive = queue_->lease("alive", 2, 0ms);
  ASSERT_EQ(dead.size(), 3u);
  ASSERT_EQ(alive.size(), 2u);
  const std::int64_t now = spotlight::clock::unix_ms();
  heartbeat("dead", now - 10000);
  heartbeat("alive", now);

  auto r = reaper();
  const exploration::ReapReport report = r.reap(now);
  EXPECT_EQ(report.reaped, std::vector<std::string>{"dead"});
  EXPECT_EQ(report.released, 3);
  EXPECT_EQ(report.live_explorers, 1);
  EXPECT_EQ(report.dead_explorers, 1);

  // Re-deliverable at once to any live explorer's ordinary reclaim (min_idle = lease timeout of
  // 60 s: nothing had expired), with one delivery counted for the dead explorer's.
  const auto rescued = queue_->reclaim("rescuer", 60000ms, 100);
  EXPECT_EQ(task_ids(rescued), task_ids(dead));
  for (const auto& l : rescued)
    EXPECT_EQ(l.delivery_count, 2) << l.task_id;
  // The live explorer still holds its leases.
  for (const auto& l : alive)
    EXPECT_TRUE(queue_->extend(l)) << l.task_id;
  // The dead explorer no longer holds anything, and is gone from the consumers.
  for (const auto& l : dead)
    EXPECT_FALSE(queue_->extend(l)) << l.task_id;
  for (const auto& e : directory_->explorers())
    EXPECT_NE(e.id, "dead");

  // Reaped once: the next pass finds nothing more to do.
  const exploration::ReapReport again = r.reap(spotlight::clock::unix_ms());
  EXPECT_TRUE(again.reaped.empty());
  EXPECT_EQ(again.released, 0);
}

TEST_F(ReaperTest, AnExplorerWithoutAHeartbeatIsNotJudged) {
  const auto leases = queue_->lease("starting", 2, 0ms);
  ASSERT_EQ(leases.size(), 2u);
  const exploration::ReapReport report = reaper().reap(spotlight::clock::unix_ms());
  EXPECT_TRUE(report.reaped.empty());
  EXPECT_EQ(report.live_explorers, 0);
  for (const auto& l : leases)
    EXPECT_TRUE(queue_->extend(l));
}

TEST_F(ReaperTest, ADeathAtTheDeliveryLimitDeadLettersLikeAnExpiry) {
  auto o = run::explore_queue_options(make_config({"exploration.max_deliveries=1"}));
  queue::RedisLeaseQueue strict(run::redis_options(*config_), o);
  exploration::ExplorerReaper r(strict, *directory_, exploration::ReaperOptions{});
  ASSERT_EQ(strict.lease("dead", 2, 0ms).size(), 2u);
  heartbeat("dead", spotlight::clock::unix_ms() - 60000);
  const exploration::ReapReport report = r.reap(spotlight::clock::unix_ms());
  EXPECT_EQ(report.released, 0);
  EXPECT_EQ(strict.stats().dead_letters, 2);
  EXPECT_TRUE(strict.reclaim("rescuer", 0ms, 10).empty());
}

TEST_F(ReaperTest, LeasesLeftUnderTheReaperByACrashedPlannerAreHandedBack) {
  ASSERT_EQ(queue_->lease("dead", 4, 0ms).size(), 4u);
  // A planner died between reclaim_from() and release().
  const auto stranded = queue_->reclaim_from("dead", exploration::kDefaultReaperConsumer, 10);
  ASSERT_EQ(stranded.size(), 4u);
  const exploration::ReapReport report = reaper().reap(spotlight::clock::unix_ms());
  EXPECT_EQ(report.released, 4);
  const auto rescued = queue_->reclaim("rescuer", 60000ms, 100);
  EXPECT_EQ(task_ids(rescued), task_ids(stranded));
  // The crashed reclaim_from() counted a delivery its release() never took back: one extra.
  for (const auto& l : rescued)
    EXPECT_EQ(l.delivery_count, 3);
}

TEST_F(ReaperTest, TheReaperRunsInsideThePlannerLoop) {
  set_trainer_iteration(0);
  auto registry = std::make_shared<metrics::Registry>("planner");
  auto planner = make_planner(*config_, registry);
  ASSERT_EQ(queue_->lease("dead", 5, 0ms).size(), 5u);
  ASSERT_EQ(queue_->lease("alive", 1, 0ms).size(), 1u);
  heartbeat("dead", spotlight::clock::unix_ms() - 10000);
  heartbeat("alive", spotlight::clock::unix_ms());
  ASSERT_EQ(planner->step(), StepOutcome::kRunning);
  EXPECT_EQ(planner->status().leases_released, 5);
  EXPECT_EQ(planner->status().live_explorers, 1);
  const std::string text = registry->text();
  EXPECT_NE(text.find("spotlight_planner_released_leases_total 5"), std::string::npos) << text;
  EXPECT_NE(text.find("spotlight_planner_live_explorers 1"), std::string::npos) << text;
  EXPECT_EQ(queue_->reclaim("rescuer", 60000ms, 100).size(), 5u);
}

}  // namespace
}  // namespace spotlight::planner::test
