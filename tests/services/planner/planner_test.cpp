// The planner against a real redis-server: what it enqueues for the trainer's iteration (ids,
// seeds, prompts, weights versions), where it stops, that a restarted planner enqueues nothing
// twice, that it follows the trainer, and that it backs off and recovers when Redis dies.

#include "services/planner/planner.hpp"

#include <algorithm>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>

#include "common/clock/unix_time.hpp"
#include "common/config/error.hpp"
#include "common/log/log.hpp"
#include "common/metrics/metrics.hpp"
#include "common/queue/redis_lease_queue.hpp"
#include "common/run/schedule.hpp"
#include "common/store/redis_key_value_store.hpp"
#include "common/task/generator.hpp"
#include "services/planner/planner_config.hpp"
#include "services/planner/redis_explorer_directory.hpp"
#include "tests/services/planner/planner_fixture.hpp"
#include "tests/support/log_capture.hpp"
#include "tests/support/wait_for.hpp"

namespace spotlight::planner::test {
namespace {

using namespace std::chrono_literals;
using spotlight::testing::wait_for;

class PlannerTest : public RedisFixture {
 protected:
  // Like make_planner(), with a short back-off cap for the Redis outage test.
  static std::unique_ptr<Planner> build(const config::Config& c,
                                        std::shared_ptr<metrics::Registry> registry,
                                        std::chrono::milliseconds max_backoff) {
    const run::RunKeys k(c.get_string("run.id"));
    PlannerOptions o = planner_options(c);
    o.max_backoff = max_backoff;
    PlannerParts parts;
    parts.queue = std::make_unique<queue::RedisLeaseQueue>(run::redis_options(c),
                                                           run::explore_queue_options(c));
    parts.store = std::make_unique<store::RedisKeyValueStore>(run::redis_options(c), k.prefix);
    parts.directory = std::make_unique<RedisExplorerDirectory>(run::redis_options(c), k,
                                                               run::explore_queue_options(c));
    parts.policy = std::make_unique<exploration::FixedExplorationPolicy>(fixed_exploration(c));
    return std::make_unique<Planner>(o, k, std::move(parts), std::move(registry));
  }

  // Expects exactly the P x N tasks of iteration t planned while the trainer was at c, with the
  // deadline set between [begin_ms, end_ms] + the time budget.
  static void expect_iteration(const std::map<std::string, wire::SeedTask>& tasks,
                               const config::Config& c, std::int64_t t, std::int64_t trainer,
                               std::int64_t begin_ms, std::int64_t end_ms) {
    const int prompts = c.get<int>("trainer.prompts_per_iteration");
    const int candidates = c.get<int>("exploration.candidates");
    const auto seed = c.get<std::uint64_t>("run.seed");
    const int steps = c.get_int("exploration.steps") > 0 ? c.get<int>("exploration.steps")
                                                         : c.get<int>("sampler.steps");
    const auto budget_ms =
        static_cast<std::int64_t>(c.get_double("exploration.max_wait_seconds") * 1000);
    const auto expected_prompts =
        run::iteration_prompts(task::PromptGenerator(task::task_options(c)), seed, t, prompts);
    int found = 0;
    for (const auto& [id, task] : tasks) {
      if (task.iteration == t) ++found;
    }
    EXPECT_EQ(found, prompts * candidates) << "tasks of iteration " << t;
    for (int i = 0; i < prompts; ++i) {
      for (int j = 0; j < candidates; ++j) {
        const std::string id = run::seed_task_id(t, i, j);
        const auto it = tasks.find(id);
        ASSERT_NE(it, tasks.end()) << "missing " << id;
        const wire::SeedTask& task = it->second;
        EXPECT_EQ(task.run_id, c.get_string("run.id"));
        EXPECT_EQ(task.iteration, t);
        EXPECT_EQ(task.prompt_index, i);
        EXPECT_EQ(task.prompt_text, expected_prompts[static_cast<std::size_t>(i)].text()) << id;
        EXPECT_EQ(task.seed, run::candidate_seed(seed, t, i, j)) << id;
        EXPECT_EQ(task.weights_version, std::clamp<std::int64_t>(t - 1, 0, trainer)) << id;
        EXPECT_EQ(task.sampler_steps, steps);
        EXPECT_EQ(task.attempt, 0);
        EXPECT_EQ(task.trajectory_end, 0) << id << ": on-policy reuse keeps no trajectory";
        EXPECT_EQ(task.max_staleness, -1) << id << ": the explorer's own bound";
        EXPECT_GE(task.deadline_unix_ms, begin_ms + budget_ms);
        EXPECT_LE(task.deadline_unix_ms, end_ms + budget_ms);
      }
    }
  }
};

TEST_F(PlannerTest, WaitsForTheTrainerWithoutEnqueueing) {
  const auto c = make_config();
  auto planner = make_planner(c, nullptr);
  EXPECT_EQ(planner->step(), StepOutcome::kWaitingForTrainer);
  EXPECT_EQ(planner->step(), StepOutcome::kWaitingForTrainer);
  EXPECT_TRUE(stream_tasks().empty());
  EXPECT_FALSE(planner_state());
  EXPECT_EQ(planner->status().tasks_enqueued, 0);
}

TEST_F(PlannerTest, EnqueuesEveryCandidateOfTheLookaheadWindow) {
  const auto c = make_config();
  set_trainer_iteration(0);
  auto registry = std::make_shared<metrics::Registry>("planner");
  auto planner = make_planner(c, registry);
  const std::int64_t begin = spotlight::clock::unix_ms();
  EXPECT_EQ(planner->step(), StepOutcome::kRunning);
  const std::int64_t end = spotlight::clock::unix_ms();

  const auto tasks = stream_tasks();
  EXPECT_EQ(tasks.size(), 2u * 3u * 5u);  // iterations 0 and 1, P x N each
  expect_iteration(tasks, c, 0, 0, begin, end);
  expect_iteration(tasks, c, 1, 0, begin, end);
  EXPECT_EQ(planner_state(), 1);
  EXPECT_EQ(planner->status().tasks_enqueued, 30);
  EXPECT_EQ(planner->status().iterations_planned, 2);

  // Nothing new while the trainer stays at 0.
  EXPECT_EQ(planner->step(), StepOutcome::kRunning);
  EXPECT_EQ(stream_tasks().size(), 30u);
  EXPECT_EQ(planner->status().tasks_enqueued, 30);

  const std::string text = registry->text();
  EXPECT_NE(text.find("spotlight_planner_tasks_enqueued_total 30"), std::string::npos) << text;
  EXPECT_NE(text.find("spotlight_planner_queue_depth 30"), std::string::npos) << text;
  EXPECT_NE(text.find("spotlight_planner_planned_iteration 1"), std::string::npos) << text;
  EXPECT_NE(text.find("spotlight_planner_trainer_iteration 0"), std::string::npos) << text;
}

TEST_F(PlannerTest, UsesTheTrainersVersionsAndTimingAheadOfIt) {
  // A planner that starts late (the trainer is at 1) with lookahead 2, the exploration step
  // count set, and the trainer's last iteration time known.
  const auto c = make_config({"planner.lookahead=2", "exploration.steps=4"});
  set_trainer_iteration(1);
  set_trainer_timing({.iteration = 0, .iteration_seconds = 12.5, .train_seconds = 10});
  auto planner = make_planner(c, nullptr);
  const std::int64_t begin = spotlight::clock::unix_ms();
  ASSERT_EQ(planner->step(), StepOutcome::kRunning);
  const std::int64_t end = spotlight::clock::unix_ms();

  const auto tasks = stream_tasks();
  EXPECT_EQ(tasks.size(), 3u * 3u * 5u);  // iterations 1, 2, 3; never 0 (already trained)
  std::map<std::int64_t, std::set<std::int64_t>> versions;  // iteration -> weights versions
  for (const auto& [id, task] : tasks) {
    versions[task.iteration].insert(task.weights_version);
    EXPECT_EQ(task.sampler_steps, 4);
    EXPECT_GE(task.deadline_unix_ms, begin + 12500);
    EXPECT_LE(task.deadline_unix_ms, end + 12500);
  }
  // clamp(t - 1, 0, trainer iteration): nobody has weights newer than the trainer's.
  EXPECT_EQ(versions,
            (std::map<std::int64_t, std::set<std::int64_t>>{{1, {0}}, {2, {1}}, {3, {1}}}));
  EXPECT_EQ(planner_state(), 3);
}

TEST_F(PlannerTest, OffloadEnqueuesTheRolloutsOfAnIterationOnceItsWeightsExist) {
  // G = 4 seeds per prompt at the rollout's 6 steps, whatever exploration.* says; lookahead 1 in
  // the file is ignored: iteration t is enqueued only once the trainer works on it (v_t exists).
  const auto c = make_config({"exploration.mode=offload", "trainer.group_size=4", "sampler.steps=6",
                              "exploration.steps=3", "trainer.train_step_end=-2"});
  EXPECT_THROW(
      make_planner(make_config({"exploration.mode=offload", "planner.policy=bandit"}), nullptr),
      config::ConfigError);
  auto planner = make_planner(c, nullptr);
  EXPECT_EQ(planner->step(), StepOutcome::kWaitingForTrainer);
  for (std::int64_t k : {0, 1}) {
    set_trainer_iteration(k);
    EXPECT_EQ(planner->step(), StepOutcome::kRunning);
    EXPECT_EQ(planner->step(), StepOutcome::kRunning);  // nothing more until the trainer moves
    // Iteration k only: the rollouts of k - 1, passed by the trainer, are purged if still there.
    const auto tasks = stream_tasks();
    EXPECT_EQ(tasks.size(), static_cast<std::size_t>(3 * 4));
    EXPECT_EQ(make_queue(c).stats().purged_total, 3 * 4 * k);
    for (const auto& [id, task] : tasks) {
      SCOPED_TRACE(id);
      EXPECT_EQ(task.iteration, k);
      EXPECT_EQ(task.weights_version, task.iteration) << "exactly v_k";
      EXPECT_EQ(task.max_staleness, 0);
      EXPECT_EQ(task.sampler_steps, 6);
      EXPECT_EQ(task.trajectory_begin, 0);
      EXPECT_EQ(task.trajectory_end, 4);  // trained steps [0, 6 - 2)
      EXPECT_LT(run::parse_seed_task_id(id)->candidate, 4);
    }
  }
}

TEST_F(PlannerTest, OffPolicyReuseAsksForTrajectoriesOfRolloutLengthTasksOnly) {
  set_trainer_iteration(0);
  const auto reuse = make_config({"exploration.reuse=off_policy", "sampler.steps=6"});
  make_planner(reuse, nullptr)->step();
  auto tasks = stream_tasks();
  ASSERT_EQ(tasks.size(), 2u * 3u * 5u);
  for (const auto& [id, task] : tasks) {
    EXPECT_EQ(task.weights_version, 0) << id;
    EXPECT_EQ(task.max_staleness, -1) << id << ": the explorer's own bound";
    EXPECT_EQ(task.trajectory_begin, 0) << id;
    EXPECT_EQ(task.trajectory_end, 5) << id;  // all but the last step
  }
}

TEST_F(PlannerTest, ShortExplorationAsksForNoTrajectory) {
  set_trainer_iteration(0);
  make_planner(make_config({"exploration.reuse=off_policy", "exploration.steps=4"}), nullptr)
      ->step();
  for (const auto& [id, task] : stream_tasks())
    EXPECT_EQ(task.trajectory_end, 0) << id << ": 4 exploration steps are not a rollout";
}

TEST_F(PlannerTest, NeverEnqueuesBeyondTheLastIteration) {
  const auto c = make_config({"trainer.iterations=3", "planner.lookahead=3"});
  set_trainer_iteration(1);
  auto planner = make_planner(c, nullptr);
  ASSERT_EQ(planner->step(), StepOutcome::kRunning);
  std::set<std::int64_t> iterations;
  for (const auto& [id, task] : stream_tasks())
    iterations.insert(task.iteration);
  EXPECT_EQ(iterations, (std::set<std::int64_t>{1, 2}));
  EXPECT_EQ(planner_state(), 2);

  set_trainer_iteration(2);
  EXPECT_EQ(planner->step(), StepOutcome::kRunning);
  set_trainer_iteration(3);  // what the trainer writes when it is done
  EXPECT_EQ(planner->step(), StepOutcome::kFinished);
  // Iteration 1's tasks, never run, were purged once the trainer passed it.
  EXPECT_EQ(stream_tasks().size(), 3u * 5u);
  EXPECT_EQ(make_queue(c).stats().purged_total, 15);
  EXPECT_EQ(planner->status().tasks_purged_passed, 15);
  EXPECT_EQ(planner_state(), 2);
}

TEST_F(PlannerTest, FollowsTheTrainerOneIterationAtATime) {
  const auto c = make_config();
  set_trainer_iteration(0);
  auto planner = make_planner(c, nullptr);
  ASSERT_EQ(planner->step(), StepOutcome::kRunning);
  EXPECT_EQ(planner->status().tasks_enqueued, 30);

  set_trainer_iteration(1);
  const std::int64_t begin = spotlight::clock::unix_ms();
  ASSERT_EQ(planner->step(), StepOutcome::kRunning);
  const std::int64_t end = spotlight::clock::unix_ms();
  EXPECT_EQ(planner->status().tasks_enqueued, 45);  // + iteration 2 only
  const auto tasks = stream_tasks();
  EXPECT_EQ(tasks.size(), 30u);  // iteration 0's waiting tasks are purged: the trainer passed it
  for (const auto& [id, task] : tasks)
    EXPECT_NE(task.iteration, 0) << id;
  EXPECT_EQ(planner->status().tasks_purged_passed, 15);
  expect_iteration(tasks, c, 2, 1, begin, end);
  EXPECT_EQ(planner_state(), 2);
}

TEST_F(PlannerTest, ARestartedPlannerEnqueuesNothingTwice) {
  const auto c = make_config();
  set_trainer_iteration(0);
  make_planner(c, nullptr)->step();
  auto q = make_queue(c);
  const std::int64_t enqueued = q.stats().enqueued_total;
  ASSERT_EQ(enqueued, 30);

  // Explorers finish a few tasks: acknowledged entries leave the stream.
  const auto leases = q.lease("explorer-a", 4, 0ms);
  ASSERT_EQ(leases.size(), 4u);
  for (const auto& l : leases)
    ASSERT_TRUE(q.complete(l, "done").recorded);

  // A new planner object on the same Redis.
  auto restarted = make_planner(c, nullptr);
  EXPECT_EQ(restarted->step(), StepOutcome::kRunning);
  EXPECT_EQ(restarted->status().tasks_enqueued, 0);
  EXPECT_EQ(restarted->status().iterations_planned, 0);

  // The worst case: a planner died after enqueueing and before recording planner_state.
  client().command({"DEL", redis_key(keys().planner_state)});
  auto crashed = make_planner(c, nullptr);
  EXPECT_EQ(crashed->step(), StepOutcome::kRunning);
  EXPECT_EQ(crashed->status().iterations_planned, 2);  // it tried again ...
  EXPECT_EQ(crashed->status().tasks_enqueued, 0);      // ... and the queue knew every id
  EXPECT_EQ(q.stats().enqueued_total, enqueued);
  const auto tasks = stream_tasks();
  EXPECT_EQ(tasks.size(), 26u);  // the completed ones were not re-added
  for (const auto& l : leases)
    EXPECT_FALSE(tasks.count(l.task_id)) << l.task_id << " came back after completion";
  EXPECT_EQ(planner_state(), 1);
}

// A client other than the queue's scripts (a buggy or hostile one with the stream owner's
// credentials) acknowledges or deletes tasks of the iteration the trainer is about to wait for,
// leased or waiting: nobody holds them and no explorer would ever be given them again. The
// planner's next reconciliation enqueues every one of them again, and counts them.
TEST_F(PlannerTest, TasksThatVanishFromTheQueueAreEnqueuedAgain) {
  const auto c = make_config();
  set_trainer_iteration(0);
  auto registry = std::make_shared<metrics::Registry>("planner");
  auto planner = make_planner(c, registry);
  ASSERT_EQ(planner->step(), StepOutcome::kRunning);
  auto q = make_queue(c);
  const auto leases = q.lease("explorer-a", 4, 0ms);
  ASSERT_EQ(leases.size(), 4u);
  const std::string stream = keys().explore_queue + ":tasks";
  const std::string group = run::explore_queue_options(c).group;
  std::set<std::string> vanished;
  for (std::size_t k = 0; k < 2; ++k) {
    client().command({"XACK", stream, group, leases[k].entry_id});
    client().command({"XDEL", stream, leases[k + 2].entry_id});
    vanished.insert({leases[k].task_id, leases[k + 2].task_id});
  }
  const auto waiting = stream_tasks();  // the leased ones and 26 waiting
  int deleted = 0;
  for (const auto& [id, task] : waiting) {
    if (vanished.count(id) || deleted == 3) continue;
    const std::string entry = q.enqueue(id, "").entry_id;  // known id: a no-op that names it
    client().command({"XDEL", stream, entry});
    vanished.insert(id);
    ++deleted;
  }
  ASSERT_EQ(vanished.size(), 7u);

  EXPECT_TRUE(wait_for(
      [&] {
        planner->step();
        return registry->text().find("spotlight_planner_tasks_reconciled_total 7") !=
               std::string::npos;
      },
      kPatience))
      << registry->text();
  // Every task of iterations 0 and 1 can be leased again, those that vanished included, once.
  std::set<std::string> leased;
  for (const auto& l : q.lease("explorer-b", 100, 0ms))
    EXPECT_TRUE(leased.insert(l.task_id).second) << l.task_id << " delivered twice";
  EXPECT_EQ(leased.size(), 30u);
  for (const std::string& id : vanished)
    EXPECT_TRUE(leased.count(id)) << id << " vanished and was not enqueued again";
  // And nothing more vanished since: no second count.
  planner->step();
  EXPECT_NE(registry->text().find("spotlight_planner_tasks_reconciled_total 7"), std::string::npos);
}

// A restarted planner reconciles the iterations its predecessor enqueued too (from their plan
// records): a task deleted by hand is enqueued again.
TEST_F(PlannerTest, ARestartedPlannerReconcilesWhatItsPredecessorEnqueued) {
  const auto c = make_config();
  set_trainer_iteration(0);
  make_planner(c, nullptr)->step();  // enqueues iterations 0 and 1, then stops
  auto q = make_queue(c);
  const std::string stream = keys().explore_queue + ":tasks";
  const std::string entry = q.enqueue(run::seed_task_id(1, 2, 4), "").entry_id;
  client().command({"XDEL", stream, entry});
  auto registry = std::make_shared<metrics::Registry>("planner");
  auto restarted = make_planner(c, registry);
  EXPECT_TRUE(wait_for(
      [&] {
        restarted->step();
        return registry->text().find("spotlight_planner_tasks_reconciled_total 1") !=
               std::string::npos;
      },
      kPatience))
      << registry->text();
  EXPECT_EQ(restarted->status().tasks_enqueued, 0);
  EXPECT_EQ(q.lease("explorer-a", 100, 0ms).size(), 30u);
}

// Redis lost the run's state (restarted with an empty AOF, a FLUSHALL: here every key of the run
// deleted). The run would recreate its keys and go on; the planner says once what vanished.
TEST_F(PlannerTest, LostRunStateIsNamedInOneErrorLine) {
  const auto c = make_config({"explorer.heartbeat_ms=10"});
  set_trainer_iteration(1);
  set_key("weights:latest", "1");
  make_planner(c, nullptr)->step();  // enqueues iterations 1 and 2
  auto q = make_queue(c);
  const auto leases = q.lease("explorer-a", 1, 0ms);
  ASSERT_EQ(leases.size(), 1u);
  ASSERT_TRUE(q.complete(leases[0], "result").recorded);
  auto registry = std::make_shared<metrics::Registry>("planner");
  auto planner = make_planner(c, registry);
  ASSERT_EQ(planner->step(), StepOutcome::kRunning);  // sees the run's state
  testing::LogCapture errors(log::Level::kError);

  const redis::Reply run_keys = client().command({"KEYS", keys().prefix + ":*"});
  for (const auto& key : run_keys.as_array())
    client().command({"DEL", key.as_string()});
  EXPECT_TRUE(wait_for(
      [&] {
        planner->step();
        return !errors.containing("Redis lost the run's state").empty();
      },
      kPatience));
  wait_for(
      [&] {
        planner->step();
        return false;
      },
      200ms);  // many more checks (one per 10 ms heartbeat): nothing new vanished
  const auto lines = errors.containing("Redis lost the run's state");
  ASSERT_EQ(lines.size(), 1u);
  for (const char* what :
       {"the trainer's progress (iteration 1, now none)",
        "the planner's progress (enqueued through 2, now none)",
        "the published weights (latest v1, now none)",
        "the task queue (30 tasks enqueued in all, now 0", "the explored results (1)"}) {
    EXPECT_NE(lines[0].find(what), std::string::npos) << what << " not in: " << lines[0];
  }
  EXPECT_NE(registry->text().find("spotlight_planner_state_losses_total 1"), std::string::npos);
}

TEST_F(PlannerTest, AMalformedTrainerIterationIsAnErrorNamingTheKey) {
  const auto c = make_config();
  set_key(keys().trainer_iteration, "0");  // a decimal string: the encoding before the record
  auto planner = make_planner(c, nullptr);
  try {
    planner->step();
    FAIL() << "expected run::MalformedRunState";
  } catch (const run::MalformedRunState& e) {
    EXPECT_EQ(e.key(), redis_key(keys().trainer_iteration));
    EXPECT_NE(std::string(e.what()).find(redis_key(keys().trainer_iteration)), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("trainer_progress"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(stream_tasks().empty());
}

TEST_F(PlannerTest, RunStopsByItselfWhenTheTrainerIsDone) {
  const auto c = make_config({"trainer.iterations=2"});
  set_trainer_iteration(2);
  auto planner = make_planner(c, nullptr);
  EXPECT_EQ(planner->run(std::stop_token{}), 0);
  EXPECT_TRUE(stream_tasks().empty());
}

TEST_F(PlannerTest, BacksOffWhileRedisIsDownAndRecoversWhenItReturns) {
  const auto c = make_config();
  auto registry = std::make_shared<metrics::Registry>("planner");
  auto planner = build(c, registry, 200ms);
  const metrics::Counter errors = registry->counter("spotlight_planner_redis_errors_total", "");
  std::stop_source stop;
  int status = -1;
  std::thread loop([&] { status = planner->run(stop.get_token()); });

  set_trainer_iteration(0);
  EXPECT_TRUE(wait_for([] { return planner_state() == 1; }, kPatience));

  const auto down = std::chrono::steady_clock::now();
  server().kill();  // AOF with fsync always: nothing acknowledged is lost
  EXPECT_TRUE(wait_for([&] { return errors.value() >= 3; }, kPatience))
      << "the planner should keep failing (and backing off) while Redis is down";
  std::this_thread::sleep_for(1s);  // the outage lasts a while: pacing, not synchronising
  server().start();

  set_trainer_iteration(1);
  EXPECT_TRUE(wait_for([] { return planner_state() == 2; }, kPatience));
  const double errors_after = errors.value();
  const auto outage_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - down)
          .count();
  stop.request_stop();
  loop.join();
  EXPECT_EQ(status, 0);

  // Iterations 1 and 2 queued, iteration 0 (passed) purged: none lost, none twice.
  const auto tasks = stream_tasks();
  EXPECT_EQ(tasks.size(), 30u);
  for (std::int64_t t = 0; t <= 2; ++t) {
    EXPECT_EQ(std::count_if(tasks.begin(), tasks.end(),
                            [&](const auto& kv) { return kv.second.iteration == t; }),
              t == 0 ? 0 : 15);
  }
  const queue::QueueStats totals = make_queue(c).stats();
  EXPECT_EQ(totals.enqueued_total, 45);
  EXPECT_EQ(totals.purged_total, 15);
  EXPECT_GE(planner->status().failed_passes, 3);
  // Back-off: 10, 20, 40, ... 200 ms between failed passes, not one failure per 10 ms poll.
  EXPECT_LE(errors_after, static_cast<double>(outage_ms) / 200.0 + 8) << outage_ms << " ms down";
}

}  // namespace
}  // namespace spotlight::planner::test
