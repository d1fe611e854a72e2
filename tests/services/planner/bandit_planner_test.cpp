// The planner with the bandit policy against a real redis-server: the per-iteration plan record
// the trainer reads (written before the tasks, followed by a restarted planner), no tasks when no
// explorer is alive, the arm's N and S in the tasks, and the trainer's outcome fed back.

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/clock/unix_time.hpp"
#include "common/queue/redis_lease_queue.hpp"
#include "common/run/schedule.hpp"
#include "common/store/redis_key_value_store.hpp"
#include "services/planner/planner.hpp"
#include "services/planner/planner_config.hpp"
#include "tests/services/planner/planner_fixture.hpp"

namespace spotlight::planner::test {
namespace {

// `count` explorers with a fresh heartbeat each time they are listed.
class FakeDirectory final : public exploration::ExplorerDirectory {
 public:
  explicit FakeDirectory(int count) : count_(count) {}
  std::vector<exploration::ExplorerSeen> explorers() override {
    std::vector<exploration::ExplorerSeen> out;
    for (int i = 0; i < count_; ++i)
      out.push_back({"explorer-" + std::to_string(i), spotlight::clock::unix_ms(), 0});
    return out;
  }

 private:
  int count_;
};

class BanditPlannerTest : public RedisFixture {
 protected:
  void SetUp() override {
    RedisFixture::SetUp();
    char pattern[] = "/tmp/spotlight-bandit-planner-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::unique_ptr<Planner> build(const config::Config& c, int explorers) {
    const run::RunKeys k(c.get_string("run.id"));
    PlannerParts parts;
    parts.queue = std::make_unique<queue::RedisLeaseQueue>(run::redis_options(c),
                                                           run::explore_queue_options(c));
    parts.store = std::make_unique<store::RedisKeyValueStore>(run::redis_options(c), k.prefix);
    parts.directory = std::make_unique<FakeDirectory>(explorers);
    parts.policy = exploration_policy(c);
    return std::make_unique<Planner>(planner_options(c), k, std::move(parts));
  }

  config::Config bandit_config(std::vector<std::string> more = {}) {
    std::vector<std::string> o = {"planner.policy=bandit",    "planner.candidates=[8, 16]",
                                  "planner.steps=[2, 4]",     "trainer.group_size=8",
                                  "run.dir=" + dir_.string(), "planner.time_margin=1.0"};
    o.insert(o.end(), more.begin(), more.end());
    return make_config(o);
  }

  std::filesystem::path dir_;
};

TEST_F(BanditPlannerTest, WithoutLiveExplorersPlansNothingAndSaysSo) {
  const auto c = bandit_config();
  set_trainer_iteration(0);
  auto planner = build(c, /*explorers=*/0);
  ASSERT_EQ(planner->step(), StepOutcome::kRunning);
  EXPECT_TRUE(stream_tasks().empty());
  EXPECT_EQ(planner_state(), 1);
  for (std::int64_t t : {0, 1}) {
    const auto record = plan(t);
    ASSERT_TRUE(record) << "plan record of iteration " << t;
    EXPECT_EQ(record->candidates, 0);
    const auto json = nlohmann::json::parse(plan(t)->reason);
    EXPECT_EQ(json["reason"], "no live explorers");
    EXPECT_EQ(json["arms"].size(), 4u);
  }
  std::ifstream decisions(dir_ / "planner.jsonl");
  int lines = 0;
  for (std::string line; std::getline(decisions, line);)
    ++lines;
  EXPECT_EQ(lines, 2);
}

TEST_F(BanditPlannerTest, EnqueuesTheChosenArmAndLearnsFromTheOutcome) {
  // 2 explorers, 10 ms per sample-step known a priori, training takes 1 s: P x N x S x 0.01 / 2
  // = 3 x 16 x 4 x 0.005 = 0.96 s fits; every arm fits.
  const auto c = bandit_config({"planner.prior_sample_step_seconds=0.01"});
  set_trainer_iteration(0);
  set_trainer_timing({.iteration = -1, .iteration_seconds = 1.5, .explore_seconds = 0.5});
  auto planner = build(c, 2);
  ASSERT_EQ(planner->step(), StepOutcome::kRunning);
  const auto p0 = plan(0);
  const auto p1 = plan(1);
  ASSERT_TRUE(p0 && p1);
  // Untried arms go cheapest first: 8 x 2, then 8 x 4 (cost 32 ties 16 x 2; grid order).
  EXPECT_EQ(p0->candidates, 8);
  EXPECT_EQ(p0->steps, 2);
  const auto tasks = stream_tasks();
  EXPECT_EQ(tasks.size(), static_cast<std::size_t>(3 * p0->candidates + 3 * p1->candidates));
  for (const auto& [id, task] : tasks) {
    const auto& p = task.iteration == 0 ? *p0 : *p1;
    EXPECT_EQ(task.sampler_steps, p.steps) << id;
    EXPECT_LT(run::parse_seed_task_id(id)->candidate, p.candidates) << id;
  }
  const auto json = nlohmann::json::parse(plan(1)->reason);
  for (const auto& arm : json["arms"]) {
    EXPECT_LE(arm["predicted_seconds"].get<double>(), json["budget_seconds"].get<double>() + 1e-9);
  }

  // The explorers finish iteration 0 at 20 ms per sample-step; the trainer trains on it.
  auto q = make_queue(c);
  for (const auto& lease : q.lease("explorer-0", 100, std::chrono::milliseconds(0))) {
    if (lease.task_id.rfind("i0/", 0) != 0) {
      q.release(lease);
      continue;
    }
    const auto task = wire::SeedTask::decode(lease.payload);
    wire::SeedResult r;
    r.task_id = lease.task_id;
    r.iteration = 0;
    r.sample_seconds = 0.02 * static_cast<double>(task.sampler_steps);
    q.complete(lease, r.encode());
  }
  set_trainer_timing(
      {.iteration = 0, .iteration_seconds = 1.5, .explore_seconds = 0.5, .group_variance = 0.03});
  set_trainer_iteration(1);
  ASSERT_EQ(planner->step(), StepOutcome::kRunning);
  const auto p2 = nlohmann::json::parse(plan(2)->reason);
  EXPECT_NEAR(p2["seconds_per_sample_step"].get<double>(), 0.02, 1e-9);  // the measurement
  bool learned = false;
  for (const auto& arm : p2["arms"]) {
    if (arm["candidates"] == 8 && arm["steps"] == 2) {
      learned = arm.contains("mean_reward") && arm["mean_reward"].get<double>() == 0.03;
    }
    // At 20 ms: 3 x 16 x 4 x 0.01 = 1.92 s > 1 s: that arm is infeasible now, and not chosen.
    if (arm["candidates"] == 16 && arm["steps"] == 4) {
      EXPECT_FALSE(arm["feasible"]);
    }
  }
  EXPECT_TRUE(learned) << p2.dump();
  EXPECT_FALSE(p2["candidates"] == 16 && p2["steps"] == 4);
}

TEST_F(BanditPlannerTest, ARestartedPlannerFollowsThePlanRecordsThatExist) {
  const auto c = bandit_config({"planner.prior_sample_step_seconds=0.01"});
  set_trainer_iteration(0);
  set_key(keys().plan(0), wire::PlanRecord{.iteration = 0, .candidates = 3, .steps = 5}.encode());
  set_key(keys().plan(1), wire::PlanRecord{.iteration = 1, .candidates = 0, .steps = 0}.encode());
  auto planner = build(c, 2);
  ASSERT_EQ(planner->step(), StepOutcome::kRunning);
  const auto tasks = stream_tasks();
  EXPECT_EQ(tasks.size(), 3u * 3u);
  for (const auto& [id, task] : tasks) {
    EXPECT_EQ(task.iteration, 0);
    EXPECT_EQ(task.sampler_steps, 5);
  }
  EXPECT_EQ(planner_state(), 1);
}

}  // namespace
}  // namespace spotlight::planner::test
