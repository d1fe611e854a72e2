// The trainer's side of kept trajectories against a real redis-server: AsyncSeedSource reads the
// chosen seeds' trajectories, trains on the good ones, counts and skips the others, and deletes
// what it no longer needs.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/queue/redis_lease_queue.hpp"
#include "common/rollout/trajectory.hpp"
#include "common/run/schedule.hpp"
#include "common/store/redis_key_value_store.hpp"
#include "common/store/redis_trajectory_store.hpp"
#include "common/store/redis_weight_store.hpp"
#include "common/task/generator.hpp"
#include "services/trainer/async_exploration.hpp"
#include "tests/services/trainer/trainer_fixtures.hpp"
#include "tests/support/redis_server.hpp"

namespace spotlight::trainer {
namespace {

using namespace std::chrono_literals;

constexpr int kSteps = 4;
constexpr int kPrompts = 2;
constexpr int kCandidates = 4;
constexpr int kGroup = 2;
constexpr std::uint64_t kRunSeed = 3;
const std::string kRunId = "reuse";

class AsyncReuseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SPOTLIGHT_REQUIRE_REDIS_SERVER();
    server_ = std::make_unique<spotlight::testing::RedisServer>();
    queue::LeaseQueueOptions q;
    q.key_prefix = keys_.explore_queue;
    queue_ = std::make_unique<queue::RedisLeaseQueue>(server_->client_options(), q);
    weights_ = std::make_unique<store::RedisWeightStore>(server_->client_options(),
                                                         store::WeightStoreOptions{keys_.prefix});
    store::TrajectoryStoreOptions t;
    t.key_prefix = keys_.trajectories;
    trajectories_ = std::make_unique<store::RedisTrajectoryStore>(server_->client_options(), t);
    testing::perturb(v0_, 11);
    v1_.copy_weights_from(v0_);
    testing::perturb(v1_, 12);
    weights_->publish(0, v0_.weights_bytes());
    weights_->publish(1, v1_.weights_bytes());
  }

  AsyncSeedOptions options(bool offload) const {
    AsyncSeedOptions o;
    o.group_size = kGroup;
    o.candidates = kCandidates;
    o.run_seed = kRunSeed;
    o.max_wait = 5s;
    o.poll = 10ms;
    o.offload = offload;
    o.trajectories = true;
    o.run_id = kRunId;
    o.rollout_sampler.steps = kSteps;
    o.window = {0, kSteps - 1};
    o.latent_shape = {3, 32, 32};
    return o;
  }

  std::vector<task::Prompt> prompts(int64_t k) const {
    return run::iteration_prompts(task::PromptGenerator(v0_.task_options()), kRunSeed, k, kPrompts);
  }

  // Records results of iteration k's candidates [0, n) through the queue (reward 0.1 * (j + 1) for
  // candidate j) and returns each one's trajectory as `weights` samples it (version `version`).
  std::map<std::string, std::string> explore(int64_t k, int n, policy::Policy& weights,
                                             int64_t version) {
    const auto p = prompts(k);
    std::vector<task::Prompt> flat;
    std::vector<uint64_t> seeds;
    std::vector<std::string> ids;
    for (int i = 0; i < kPrompts; ++i) {
      for (int j = 0; j < n; ++j) {
        flat.push_back(p[i]);
        seeds.push_back(run::candidate_seed(kRunSeed, k, i, j));
        ids.push_back(run::seed_task_id(k, i, j));
        queue_->enqueue(ids.back(), "task");
      }
    }
    sampler::SamplerOptions s;
    s.steps = kSteps;
    s.keep_trajectory = true;
    const auto sampled = weights.sample(flat, seeds, s, static_cast<int>(flat.size())).front();
    const std::string checksum = weights_->manifest(version)->checksum;
    std::map<std::string, std::string> out;
    for (const auto& lease : queue_->lease("test", static_cast<int>(ids.size()), 0ms)) {
      const auto id = run::parse_seed_task_id(lease.task_id);
      const auto index = static_cast<int64_t>(id->prompt * n + id->candidate);
      wire::SeedResult result;
      result.task_id = lease.task_id;
      result.run_id = kRunId;
      result.iteration = k;
      result.prompt_index = id->prompt;
      result.seed = seeds[index];
      result.weights_version_used = version;
      result.reward = 0.1 * (id->candidate + 1);
      EXPECT_TRUE(queue_->complete(lease, result.encode()).recorded);
      rollout::TrajectoryOrigin origin{lease.task_id, kRunId,  k,        id->prompt,
                                       seeds[index],  version, checksum, "test"};
      out[lease.task_id] = rollout::make_trajectory(origin, s, sampled.latents[index],
                                                    sampled.log_probs[index], {0, kSteps - 1})
                               .encode();
    }
    EXPECT_EQ(out.size(), ids.size());
    return out;
  }

  bool kept(const std::string& id) { return trajectories_->get(id).has_value(); }

  run::RunKeys keys_{kRunId};
  std::unique_ptr<spotlight::testing::RedisServer> server_;
  std::unique_ptr<queue::RedisLeaseQueue> queue_;
  std::unique_ptr<store::RedisWeightStore> weights_;
  std::unique_ptr<store::RedisTrajectoryStore> trajectories_;
  policy::Policy v0_{testing::micro()}, v1_{testing::micro()};
};

TEST_F(AsyncReuseTest, TrainsOnGoodTrajectoriesCountsTheRestAndDeletesThem) {
  auto written = explore(1, kCandidates, v0_, 0);
  // Rewards 0.1 .. 0.4: the G = 2 of maximum variance are candidates 0 and 3 of each prompt.
  const auto id = [](int i, int j) { return run::seed_task_id(1, i, j); };
  auto tampered = wire::SeedTrajectory::decode(written[id(0, 3)]);
  tampered.latents[100] += 0.5f;  // its own checksum no longer matches
  written[id(0, 3)] = tampered.encode();
  written.erase(id(1, 0));  // a result without its trajectory
  auto stale_claim = wire::SeedTrajectory::decode(written[id(1, 3)]);
  stale_claim.weights_checksum = weights_->manifest(1)->checksum;  // not v0's
  written[id(1, 3)] = stale_claim.encode();
  for (const auto& [task, bytes] : written)
    trajectories_->put(task, bytes);

  AsyncSeedSource source(options(false), *queue_, nullptr, nullptr, trajectories_.get(),
                         weights_.get());
  const auto selection = source.select(1, prompts(1));
  ASSERT_EQ(selection.seeds.size(), 2u);
  ASSERT_EQ(selection.rollouts.size(), 2u);
  EXPECT_EQ(selection.seeds[0], (std::vector<uint64_t>{run::candidate_seed(kRunSeed, 1, 0, 0),
                                                       run::candidate_seed(kRunSeed, 1, 0, 3)}));
  ASSERT_TRUE(selection.rollouts[0][0].has_value());
  EXPECT_FALSE(selection.rollouts[0][1].has_value());
  EXPECT_FALSE(selection.rollouts[1][0].has_value());
  EXPECT_FALSE(selection.rollouts[1][1].has_value());
  const auto& good = *selection.rollouts[0][0];
  EXPECT_EQ(good.weights_version, 0);
  EXPECT_DOUBLE_EQ(good.reward, 0.1);
  const auto original = wire::SeedTrajectory::decode(written[id(0, 0)]);
  EXPECT_TRUE(torch::equal(good.latents.flatten(), torch::tensor(original.latents, torch::kFloat)));
  EXPECT_EQ(selection.rejected_trajectories,
            (std::map<std::string, int>{{"checksum", 1}, {"missing", 1}, {"weights_checksum", 1}}));

  // Seeds not chosen: deleted at once; chosen ones once the iteration is done.
  for (int i = 0; i < kPrompts; ++i) {
    EXPECT_FALSE(kept(id(i, 1)));
    EXPECT_FALSE(kept(id(i, 2)));
  }
  EXPECT_TRUE(kept(id(0, 0)));
  EXPECT_TRUE(kept(id(0, 3)));
  source.iteration_done(1);
  EXPECT_FALSE(kept(id(0, 0)));
  EXPECT_FALSE(kept(id(0, 3)));
  EXPECT_FALSE(kept(id(1, 3)));

  // The next iteration, explored with v_1: every chosen trajectory is usable. One that claims
  // v_2 (not published; newer than the trainer) is rejected although its result agrees.
  auto next_written = explore(2, kCandidates, v1_, 1);
  auto newer = wire::SeedTrajectory::decode(next_written[run::seed_task_id(2, 1, 3)]);
  newer.weights_version = 2;
  next_written[run::seed_task_id(2, 1, 3)] = newer.encode();
  for (const auto& [task, bytes] : next_written)
    trajectories_->put(task, bytes);
  const auto next = source.select(2, prompts(2));
  EXPECT_TRUE(next.rollouts[0][0] && next.rollouts[0][1] && next.rollouts[1][0]);
  EXPECT_FALSE(next.rollouts[1][1].has_value());
  EXPECT_EQ(next.rollouts[0][0]->weights_version, 1);
  EXPECT_EQ(next.rejected_trajectories, (std::map<std::string, int>{{"weights_version", 1}}));
}

TEST_F(AsyncReuseTest, OffloadTrainsOnCandidatesZeroToGInOrder) {
  const auto written = explore(0, kGroup, v0_, 0);
  for (const auto& [task, bytes] : written)
    trajectories_->put(task, bytes);
  AsyncSeedSource source(options(true), *queue_, nullptr, nullptr, trajectories_.get(),
                         weights_.get());
  const auto selection = source.select(0, prompts(0));
  EXPECT_TRUE(selection.candidate_rewards.empty()) << "offload explores nothing";
  EXPECT_EQ(selection.fallback_prompts, 0);
  for (int i = 0; i < kPrompts; ++i) {
    ASSERT_EQ(selection.rollouts[i].size(), static_cast<size_t>(kGroup));
    for (int j = 0; j < kGroup; ++j) {
      EXPECT_EQ(selection.seeds[i][j], run::candidate_seed(kRunSeed, 0, i, j));
      ASSERT_TRUE(selection.rollouts[i][j].has_value());
      EXPECT_DOUBLE_EQ(selection.rollouts[i][j]->reward, 0.1 * (j + 1));
      EXPECT_EQ(selection.rollouts[i][j]->weights_version, 0);
    }
  }
  EXPECT_TRUE(selection.rejected_trajectories.empty());
}

}  // namespace
}  // namespace spotlight::trainer
