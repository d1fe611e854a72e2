// Per-prompt (adaptive) allocation end to end on a real redis-server: the planner enqueues, an
// explorer stand-in leases tasks in queue order and completes them with rewards from a constructed
// table, and the planner, stepped between completions, purges what is no longer needed. On the
// same table and the same work (P x N samples), fixed N never sees the one prompt's rare success;
// adaptive finds it because the prompts that reach their contrast early stop taking candidates.
// The queue's accounting stays exact (purged is not lost) and uniform prompts are reported.

#include <map>
#include <set>
#include <string>

#include "common/metrics/metrics.hpp"
#include "common/queue/redis_lease_queue.hpp"
#include "common/run/run_state.hpp"
#include "common/run/schedule.hpp"
#include "common/store/redis_key_value_store.hpp"
#include "common/task/generator.hpp"
#include "services/planner/planner_config.hpp"
#include "tests/services/planner/planner_fixture.hpp"

namespace spotlight::planner::test {
namespace {

using namespace std::chrono_literals;

class AllocationTest : public RedisFixture {
 protected:
  // Three prompts, G = 2, N = 4 (12 samples per iteration). Prompts 0 and 1 succeed every other
  // candidate; prompt 2 succeeds only at candidate 6.
  static double reward(int prompt, int candidate) {
    if (prompt < 2) return candidate % 2 == 1 ? 1.0 : 0.0;
    return candidate == 6 ? 1.0 : 0.0;
  }

  static config::Config config(const std::string& allocation) {
    return make_config({"trainer.iterations=2", "trainer.group_size=2", "exploration.candidates=4",
                        "exploration.allocation=" + allocation, "exploration.adaptive_cap=3",
                        "planner.decisions_file=" + std::string(::testing::TempDir()) + "/" +
                            run_id() + ".jsonl"});
  }

  // Runs iteration 0's queue to the end, one task at a time in queue order, stepping the planner
  // between completions. Returns the rewards explored, by (prompt, candidate).
  static std::map<std::pair<int, int>, double> explore(Planner& planner, queue::LeaseQueue& q) {
    std::map<std::pair<int, int>, double> explored;
    for (int guard = 0; guard < 1000; ++guard) {
      EXPECT_EQ(planner.step(), StepOutcome::kRunning);
      const auto leases = q.lease("explorer", 1, 0ms);
      if (leases.empty()) break;
      const auto id = run::parse_seed_task_id(leases[0].task_id);
      EXPECT_TRUE(id);
      if (id->iteration != 0) {  // iteration 0 is done: hand iteration 1's task back
        EXPECT_TRUE(q.release(leases[0]));
        break;
      }
      wire::SeedResult r;
      r.task_id = leases[0].task_id;
      r.iteration = 0;
      r.prompt_index = id->prompt;
      r.reward = reward(id->prompt, id->candidate);
      r.sample_seconds = 0.01;
      EXPECT_TRUE(q.complete(leases[0], r.encode()).recorded);
      explored[{id->prompt, id->candidate}] = r.reward;
    }
    EXPECT_EQ(planner.step(), StepOutcome::kRunning);
    return explored;
  }

  static bool found_success(const std::map<std::pair<int, int>, double>& explored, int prompt) {
    for (const auto& [where, r] : explored) {
      if (where.first == prompt && r > 0) return true;
    }
    return false;
  }

  static void expect_exact_accounting(queue::RedisLeaseQueue& q) {
    const queue::QueueStats s = q.stats();
    EXPECT_EQ(s.enqueued_total + s.requeued_total,
              s.acked_total + s.dead_lettered_total + s.purged_total + s.length);
  }
};

TEST_F(AllocationTest, FixedNMissesTheRareSuccess) {
  const auto c = config("fixed");
  set_trainer_iteration(0);
  auto registry = std::make_shared<metrics::Registry>("planner");
  auto planner = make_planner(c, registry);
  auto q = make_queue(c);
  const auto explored = explore(*planner, q);
  EXPECT_EQ(explored.size(), 12u);
  EXPECT_FALSE(found_success(explored, 2));
  EXPECT_EQ(q.stats().purged_total, 0);

  // The trainer passes iteration 0: prompt 2 is reported uniform, its posterior updated.
  set_trainer_iteration(1);
  EXPECT_EQ(planner->step(), StepOutcome::kRunning);
  EXPECT_EQ(planner->status().uniform_prompts, 1);
  EXPECT_NE(registry->text().find("spotlight_planner_uniform_prompts_total 1"), std::string::npos);
  store::RedisKeyValueStore kv(run::redis_options(c), keys().prefix);
  run::RunState state(kv, keys());
  const auto prompts = run::iteration_prompts(task::PromptGenerator(task::task_options(c)),
                                              c.get<std::uint64_t>("run.seed"), 0, 3);
  const auto posterior = state.prompt_posterior(prompts[2].text());
  ASSERT_TRUE(posterior);
  EXPECT_DOUBLE_EQ(posterior->a, 1.0);  // four failures
  EXPECT_DOUBLE_EQ(posterior->b, 5.0);
  EXPECT_EQ(posterior->updated_through, 0);
  EXPECT_EQ(posterior->uniform_iterations, 1);
  // Folded in once: another pass (or a restarted planner) does not count it again.
  auto restarted = make_planner(c, nullptr);
  EXPECT_EQ(restarted->step(), StepOutcome::kRunning);
  EXPECT_DOUBLE_EQ(state.prompt_posterior(prompts[2].text())->b, 5.0);
  expect_exact_accounting(q);
}

TEST_F(AllocationTest, AdaptiveFindsTheRareSuccessWithTheSameWork) {
  const auto c = config("adaptive");
  set_trainer_iteration(0);
  auto registry = std::make_shared<metrics::Registry>("planner");
  auto planner = make_planner(c, registry);
  auto q = make_queue(c);
  // The plan asks for room (3 x 4 candidates per prompt); the trainer waits for what is not
  // purged.
  const auto explored = explore(*planner, q);
  ASSERT_TRUE(plan(0));
  EXPECT_EQ(plan(0)->candidates, 12);
  EXPECT_TRUE(found_success(explored, 2));
  EXPECT_LE(explored.size(), 12u) << "no more work than fixed N";
  // Prompts 0 and 1 stopped at their first contrast (candidates 0 and 1).
  for (int prompt : {0, 1}) {
    for (int j = 2; j < 12; ++j)
      EXPECT_FALSE(explored.count({prompt, j})) << prompt << "/" << j;
  }
  const queue::QueueStats s = q.stats();
  EXPECT_EQ(s.purged_total, 3 * 12 - static_cast<std::int64_t>(explored.size()));
  EXPECT_EQ(planner->status().tasks_purged_satisfied, s.purged_total);
  EXPECT_TRUE(q.purged(run::seed_task_id(0, 0, 5)));
  EXPECT_FALSE(q.purged(run::seed_task_id(0, 2, 6)));
  EXPECT_NE(
      registry->text().find("spotlight_planner_purged_tasks_total{reason=\"prompt_satisfied\"}"),
      std::string::npos);
  expect_exact_accounting(q);

  set_trainer_iteration(1);
  EXPECT_EQ(planner->step(), StepOutcome::kRunning);
  EXPECT_EQ(planner->status().uniform_prompts, 0);
}

TEST_F(AllocationTest, TheBudgetEndsAnIterationWhoseRareSuccessIsOutOfReach) {
  // Candidate 6 of prompt 2 would come after the budget when prompts 0 and 1 need more too.
  const auto c = make_config({"trainer.iterations=2", "trainer.group_size=2",
                              "exploration.candidates=4", "exploration.allocation=adaptive",
                              "exploration.adaptive_cap=3", "exploration.contrast_target=10"});
  set_trainer_iteration(0);
  auto planner = make_planner(c, nullptr);
  auto q = make_queue(c);
  std::int64_t done = 0;
  for (int guard = 0; guard < 1000; ++guard) {
    planner->step();
    const auto leases = q.lease("explorer", 1, 0ms);
    if (leases.empty()) break;
    if (run::parse_seed_task_id(leases[0].task_id)->iteration != 0) break;
    wire::SeedResult r;
    r.task_id = leases[0].task_id;
    ASSERT_TRUE(q.complete(leases[0], r.encode()).recorded);
    ++done;
  }
  EXPECT_EQ(done, 12) << "P x N samples, then the rest is purged";
  EXPECT_EQ(planner->status().tasks_purged_budget, 3 * 12 - 12);
  expect_exact_accounting(q);
}

TEST_F(AllocationTest, ARestartedPlannerSpendsTheBudgetItsPlanRecordCarries) {
  // An earlier planner's record: room for 3 x 4 candidates per prompt, a budget of 4 per prompt,
  // and reasons that are only prose. The budget is a field of the record, not of its reasons.
  const auto c = make_config({"trainer.iterations=2", "trainer.group_size=2",
                              "exploration.candidates=4", "exploration.allocation=adaptive",
                              "exploration.adaptive_cap=3", "exploration.contrast_target=10"});
  set_key(keys().plan(0), wire::PlanRecord{.iteration = 0,
                                           .candidates = 12,
                                           .steps = 4,
                                           .budget_candidates = 4,
                                           .reason = "chosen by the bandit: widest feasible arm"}
                              .encode());
  set_trainer_iteration(0);
  auto planner = make_planner(c, nullptr);
  auto q = make_queue(c);
  std::int64_t done = 0;
  for (int guard = 0; guard < 1000; ++guard) {
    planner->step();
    const auto leases = q.lease("explorer", 1, 0ms);
    if (leases.empty()) break;
    if (run::parse_seed_task_id(leases[0].task_id)->iteration != 0) break;
    wire::SeedResult r;
    r.task_id = leases[0].task_id;
    ASSERT_TRUE(q.complete(leases[0], r.encode()).recorded);
    ++done;
  }
  EXPECT_EQ(plan(0)->candidates, 12) << "the record that existed is followed";
  EXPECT_EQ(done, 3 * 4) << "P x the record's budget_candidates, then the rest is purged";
  EXPECT_EQ(planner->status().tasks_purged_budget, 3 * 12 - 3 * 4);
  expect_exact_accounting(q);
}

}  // namespace
}  // namespace spotlight::planner::test
