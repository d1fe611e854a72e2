// Explorer against a real redis-server: explorers run as threads with their own connections,
// the policy is the micro preset with perturbed weights (varied images), weights are published
// by the test through the real weight store.

#include "services/explorer/explorer.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include "common/image/png.hpp"
#include "common/log/log.hpp"
#include "common/metrics/metrics.hpp"
#include "common/queue/redis_lease_queue.hpp"
#include "common/redis/client.hpp"
#include "common/reward/remote_reward.hpp"
#include "common/rollout/trajectory.hpp"
#include "common/rpc/server.hpp"
#include "common/run/run_config.hpp"
#include "common/run/run_state.hpp"
#include "common/run/task_key_source.hpp"
#include "common/store/redis_key_value_store.hpp"
#include "common/store/redis_trajectory_store.hpp"
#include "common/store/redis_weight_store.hpp"
#include "tests/services/explorer/explorer_test_support.hpp"
#include "tests/support/log_capture.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/wait_for.hpp"

namespace spotlight::explorer {
namespace {

using namespace std::chrono_literals;
using spotlight::testing::wait_for;
using testing::DenseReward;
using testing::TaskSpec;

constexpr auto kWait = 60s;  // generous: the machine running the tests may be busy
constexpr int kSteps = 4;
const std::string kRunId = "explorer-test";

// Blocks the first score() call until open() (a chunk "in flight" for as long as a test needs).
class GateReward final : public reward::RewardFunction {
 public:
  std::vector<reward::Scored> score(const std::vector<task::Prompt>& prompts,
                                    const std::vector<task::Image>& images) override {
    {
      std::unique_lock lock(mutex_);
      entered_ = true;
      changed_.notify_all();
      changed_.wait(lock, [&] { return open_; });
    }
    return inner_.score(prompts, images);
  }
  std::string name() const override { return "gate"; }
  bool wait_entered(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return entered_; });
  }
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }

 private:
  DenseReward inner_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool entered_ = false;
  bool open_ = false;
};

// The run's KV store with a hook on add() (the explorer adds to explorer:sample_steps after every
// sampler step): lets a test act at an exact step boundary of the explorer's thread.
class HookedKv final : public store::KeyValueStore {
 public:
  HookedKv(const redis::RedisOptions& redis, std::string prefix)
      : inner_(redis, std::move(prefix)) {}
  std::function<void(std::string_view key, std::int64_t delta)> on_add;

  void put(std::string_view k, std::string_view v) override { inner_.put(k, v); }
  bool put_if_absent(std::string_view k, std::string_view v) override {
    return inner_.put_if_absent(k, v);
  }
  std::optional<std::string> get(std::string_view k) override { return inner_.get(k); }
  bool erase(std::string_view k) override { return inner_.erase(k); }
  std::int64_t add(std::string_view k, std::int64_t delta) override {
    const auto n = inner_.add(k, delta);
    if (on_add) on_add(k, delta);
    return n;
  }
  std::int64_t counter(std::string_view k) override { return inner_.counter(k); }
  bool wait(std::span<const std::string> keys, std::chrono::milliseconds timeout) override {
    return inner_.wait(keys, timeout);
  }

 private:
  store::RedisKeyValueStore inner_;
};

// One explorer on its own thread with its own connections, policy, reward and metrics.
class Worker {
 public:
  Worker(const redis::RedisOptions& redis, const queue::LeaseQueueOptions& queue_options,
         const store::WeightStoreOptions& weight_options, ExplorerOptions options,
         std::unique_ptr<reward::RewardFunction> reward)
      : queue_(redis, queue_options),
        weights_(redis, weight_options),
        kv_(redis, run::RunKeys(options.run_id).prefix),
        trajectories_(redis, trajectory_options(options.run_id)),
        reward_(std::move(reward)),
        policy_(testing::micro_policy(0, 0.0)),
        registry_("explorer"),
        explorer_(std::move(options), ExplorerParts{queue_, weights_, kv_, *reward_, *policy_,
                                                    registry_, &trajectories_}) {}
  ~Worker() { stop(); }

  void start() {
    thread_ = std::jthread([this](std::stop_token stop) {
      reason_ = explorer_.run(stop);
      returned_ = true;
    });
  }
  // Requests a stop (if still running) and joins.
  std::optional<ExitReason> stop() {
    if (thread_.joinable()) {
      thread_.request_stop();
      thread_.join();
    }
    return reason_;
  }
  void request_stop() { thread_.request_stop(); }
  // Requests a stop from the explorer's own thread once it has computed `steps` sampler steps:
  // the chunk in flight then stops at that exact step boundary.
  void stop_after_steps(std::int64_t steps) {
    kv_.on_add = [this, steps, done = std::int64_t{0}](std::string_view key,
                                                       std::int64_t delta) mutable {
      if (key != run::RunKeys(kRunId).sample_steps) return;
      done += delta;
      if (done >= steps) thread_.request_stop();
    };
  }
  bool returned() const { return returned_; }
  const ExplorerMetrics& metrics() const { return explorer_.metrics(); }
  static store::TrajectoryStoreOptions trajectory_options(const std::string& run_id) {
    store::TrajectoryStoreOptions o;
    o.key_prefix = run::RunKeys(run_id).trajectories;
    o.ttl = 600s;
    return o;
  }

 private:
  queue::RedisLeaseQueue queue_;
  store::RedisWeightStore weights_;
  HookedKv kv_;
  store::RedisTrajectoryStore trajectories_;
  std::unique_ptr<reward::RewardFunction> reward_;
  std::unique_ptr<policy::Policy> policy_;
  metrics::Registry registry_;
  Explorer explorer_;
  std::optional<ExitReason> reason_;
  std::atomic<bool> returned_{false};
  std::jthread thread_;  // last: joined before the rest is destroyed
};

class ExplorerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SPOTLIGHT_REQUIRE_REDIS_SERVER();
    at::set_num_threads(1);  // explorers in threads share two cores with other tests
    server_ = std::make_unique<spotlight::testing::RedisServer>();
    queue_ = std::make_unique<queue::RedisLeaseQueue>(redis(), queue_options());
    store_ = std::make_unique<store::RedisWeightStore>(redis(), weight_options());
    kv_ = std::make_unique<store::RedisKeyValueStore>(redis(), keys_.prefix);
    kv_->put(keys_.trainer_iteration, wire::TrainerProgress{.iteration = 0}.encode());
  }

  redis::RedisOptions redis() const {
    auto o = server_->client_options();
    o.command_timeout = 5s;
    return o;
  }
  queue::LeaseQueueOptions queue_options() const {
    queue::LeaseQueueOptions o;
    o.key_prefix = keys_.explore_queue;
    o.lease_timeout = 5s;
    o.max_deliveries = 3;
    return o;
  }
  store::WeightStoreOptions weight_options() const {
    store::WeightStoreOptions o;
    o.key_prefix = keys_.prefix;
    o.chunk_bytes = 16 << 10;  // several chunks even for the micro preset
    return o;
  }
  static ExplorerOptions options(const std::string& id) {
    ExplorerOptions o;
    o.id = id;
    o.run_id = kRunId;
    o.limits = testing::limits(kRunId);
    o.batch = 4;
    o.max_staleness = 1;
    o.iterations = 1;
    o.heartbeat_interval = 100ms;
    o.lease_timeout = 5s;
    o.block_timeout = 50ms;
    o.reclaim_interval = 50ms;
    o.weights_retry_interval = 100ms;
    o.finish_poll_interval = 50ms;
    o.min_backoff = 20ms;
    o.max_backoff = 200ms;
    o.grace_period = 10s;
    return o;
  }
  std::unique_ptr<Worker> worker(ExplorerOptions o, std::unique_ptr<reward::RewardFunction> r =
                                                        std::make_unique<DenseReward>()) {
    return std::make_unique<Worker>(redis(), queue_options(), weight_options(), std::move(o),
                                    std::move(r));
  }

  void publish(std::int64_t version, const policy::Policy& policy) {
    store_->publish(version, policy.weights_bytes());
  }
  std::optional<wire::SeedResult> result(const std::string& task_id) {
    const auto bytes = queue_->result(task_id);
    if (!bytes) return std::nullopt;
    return wire::SeedResult::decode(*bytes);
  }
  bool all_done(const std::vector<TaskSpec>& tasks) {
    for (const auto& t : tasks) {
      if (!queue_->result(t.id)) return false;
    }
    return true;
  }
  // Every task has exactly the result it should: ids, seed, iteration, prompt, run, reward
  // range, a version the staleness bound allows.
  void expect_results_match(const std::vector<TaskSpec>& tasks, std::int64_t max_staleness) {
    for (const auto& t : tasks) {
      SCOPED_TRACE(t.id);
      const auto r = result(t.id);
      ASSERT_TRUE(r.has_value());
      EXPECT_EQ(r->task_id, t.id);
      EXPECT_EQ(r->run_id, kRunId);
      EXPECT_EQ(r->seed, t.task.seed);
      EXPECT_EQ(r->iteration, t.task.iteration);
      EXPECT_EQ(r->prompt_index, t.task.prompt_index);
      EXPECT_GE(r->reward, 0.0);
      EXPECT_LE(r->reward, 1.0);
      EXPECT_GE(r->weights_version_used, t.task.weights_version - max_staleness);
      EXPECT_GT(r->sample_seconds, 0.0);
    }
  }
  std::vector<double> rewards_of(const std::vector<TaskSpec>& tasks) {
    std::vector<double> out;
    for (const auto& t : tasks)
      out.push_back(result(t.id)->reward);
    return out;
  }
  std::vector<std::int64_t> versions_of(const std::vector<TaskSpec>& tasks) {
    std::vector<std::int64_t> out;
    for (const auto& t : tasks)
      out.push_back(result(t.id)->weights_version_used);
    return out;
  }

  // The run's task key (created in this test's Redis as the planner would; the explorers find it).
  run::TaskKey key() const { return testing::run_task_key(redis(), kRunId); }

  run::RunKeys keys_{kRunId};
  std::unique_ptr<spotlight::testing::RedisServer> server_;
  std::unique_ptr<queue::RedisLeaseQueue> queue_;
  std::unique_ptr<store::RedisWeightStore> store_;
  std::unique_ptr<store::RedisKeyValueStore> kv_;
};

TEST_F(ExplorerTest, EveryTaskOfAnIterationGetsOneMatchingResult) {
  auto p0 = testing::micro_policy(1);
  publish(0, *p0);
  const auto tasks = testing::seed_tasks(kRunId, 1, 3, 4, 0, kSteps);
  ASSERT_EQ(testing::enqueue(*queue_, tasks, key()), 12);

  auto o = options("a");
  auto w = worker(o, reward::make_task_reward(p0->task_options()));
  w->start();
  ASSERT_TRUE(wait_for([&] { return all_done(tasks); }, kWait));
  expect_results_match(tasks, o.max_staleness);
  for (const auto& t : tasks) {
    EXPECT_EQ(result(t.id)->weights_version_used, 0);
    EXPECT_EQ(result(t.id)->explorer_id, "a");
  }
  const auto stats = queue_->stats();
  EXPECT_EQ(stats.length, 0);
  EXPECT_EQ(stats.results, 12);
  EXPECT_EQ(stats.acked_total, 12);
  EXPECT_EQ(w->metrics().tasks_completed.value(), 12);
  EXPECT_EQ(w->metrics().duplicate_results.value(), 0);
  EXPECT_EQ(w->metrics().weights_version.value(), 0);
  EXPECT_EQ(w->metrics().weights_loaded.value(), 1);
  EXPECT_GT(w->metrics().samples_per_second.value(), 0);
  // The heartbeat: the run's wire::Heartbeat record of this explorer.
  const auto beat = run::RunState(*kv_, keys_).heartbeat("a");
  ASSERT_TRUE(beat.has_value());
  EXPECT_EQ(beat->explorer_id, "a");
  EXPECT_GT(beat->unix_ms, 1'600'000'000'000LL);

  // The run ends: the explorer returns by itself.
  EXPECT_FALSE(w->returned());
  kv_->put(keys_.trainer_iteration, wire::TrainerProgress{.iteration = 1}.encode());
  ASSERT_TRUE(wait_for([&] { return w->returned(); }, kWait));
  EXPECT_EQ(w->stop(), ExitReason::kRunFinished);
}

TEST_F(ExplorerTest, KeepsPromptZerosImagesForTheTrainersExplorationSample) {
  auto p0 = testing::micro_policy(1);
  publish(0, *p0);
  const auto sampled = testing::seed_tasks(kRunId, 2, 2, 3, 0, kSteps);      // every 2nd
  const auto not_sampled = testing::seed_tasks(kRunId, 3, 2, 3, 0, kSteps);  // iteration
  testing::enqueue(*queue_, sampled, key());
  testing::enqueue(*queue_, not_sampled, key());
  auto o = options("a");
  o.sample_images_every = 2;
  o.iterations = 4;
  auto w = worker(o);
  w->start();
  ASSERT_TRUE(wait_for([&] { return all_done(sampled) && all_done(not_sampled); }, kWait));
  int kept = 0;
  for (const auto* tasks : {&sampled, &not_sampled}) {
    for (const auto& t : *tasks) {
      SCOPED_TRACE(t.id);
      const auto png =
          kv_->get(keys_.explored_image(t.task.iteration, t.task.prompt_index, t.task.seed));
      const bool expected = t.task.iteration == 2 && t.task.prompt_index == 0;
      ASSERT_EQ(png.has_value(), expected);
      if (!png) continue;
      const image::RgbImage decoded = image::decode_png(*png);
      EXPECT_EQ(decoded.width, p0->task_options().image_size);
      EXPECT_EQ(decoded.height, p0->task_options().image_size);
      ++kept;
    }
  }
  EXPECT_EQ(kept, 3);
  EXPECT_EQ(w->metrics().explored_images.value(), 3);
  EXPECT_EQ(w->metrics().explored_image_errors.value(), 0);
}

TEST_F(ExplorerTest, RewardsEqualInProcessSamplingOfTheSameBatch) {
  auto p0 = testing::micro_policy(2);
  publish(0, *p0);
  DenseReward dense;
  // A batch of 4 sampled together, and 4 sampled one at a time.
  const auto together = testing::seed_tasks(kRunId, 1, 2, 2, 0, kSteps);
  const auto alone = testing::seed_tasks(kRunId, 2, 2, 2, 0, kSteps);
  const auto expect_together = testing::reference_rewards(*p0, together, 4, dense);
  const auto expect_alone = testing::reference_rewards(*p0, alone, 1, dense);
  // The rewards differ between tasks (the check below is not vacuous).
  EXPECT_GT(std::set<double>(expect_together.begin(), expect_together.end()).size(), 1u);

  {
    testing::enqueue(*queue_, together,
                     key());  // all waiting before the explorer leases: one batch
    auto w = worker(options("a"));
    w->start();
    ASSERT_TRUE(wait_for([&] { return all_done(together); }, kWait));
  }
  EXPECT_EQ(rewards_of(together), expect_together);  // bit for bit
  {
    auto o = options("b");
    o.chunk = 1;
    testing::enqueue(*queue_, alone, key());
    auto w = worker(o);
    w->start();
    ASSERT_TRUE(wait_for([&] { return all_done(alone); }, kWait));
  }
  EXPECT_EQ(rewards_of(alone), expect_alone);

  // Batch composition: a batch-of-one run is only expected to be close to the batched one
  // (BLAS may block differently per batch size); equal is fine too.
  const auto together_alone = testing::reference_rewards(*p0, together, 1, dense);
  for (std::size_t i = 0; i < together.size(); ++i) {
    EXPECT_NEAR(together_alone[i], expect_together[i], 1e-4) << together[i].id;
  }
  std::cout << "[ info     ] batch of one vs batch of four: "
            << (together_alone == expect_together ? "bit-identical" : "close, not identical")
            << "\n";
}

TEST_F(ExplorerTest, KeepsTheTrajectoriesTasksAskForWithTheWeightsTheyAllow) {
  auto p0 = testing::micro_policy(6);
  auto p1 = testing::micro_policy(7);
  publish(0, *p0);
  store::RedisTrajectoryStore trajectories(redis(), Worker::trajectory_options(kRunId));
  const rollout::StepWindow window{1, kSteps - 1};
  auto keep = testing::seed_tasks(kRunId, 1, 2, 2, 0, kSteps);
  for (auto& t : keep) {
    t.task.trajectory_begin = window.begin;
    t.task.trajectory_end = window.end;
  }
  const auto plain = testing::seed_tasks(kRunId, 2, 1, 2, 0, kSteps);
  testing::enqueue(*queue_, keep, key());  // one batch of 4, sampled together in lease order
  auto w = worker(options("a"));
  w->start();
  ASSERT_TRUE(wait_for([&] { return all_done(keep); }, kWait));

  // What the explorer kept is the in-process trajectory of the same batch, bit for bit, and
  // passes every check the trainer makes.
  std::vector<task::Prompt> prompts;
  std::vector<std::uint64_t> seeds;
  for (const auto& t : keep) {
    prompts.push_back(*task::parse_prompt(t.task.prompt_text));
    seeds.push_back(t.task.seed);
  }
  sampler::SamplerOptions sampler;
  sampler.steps = kSteps;
  sampler.keep_trajectory = true;
  const auto reference = p0->sample(prompts, seeds, sampler, 4).front();
  const auto published = [&](std::int64_t v) -> std::optional<std::string> {
    const auto m = store_->manifest(v);
    return m ? std::optional<std::string>(m->checksum) : std::nullopt;
  };
  std::int64_t bytes = 0;
  for (std::size_t b = 0; b < keep.size(); ++b) {
    SCOPED_TRACE(keep[b].id);
    const auto kept = trajectories.get(keep[b].id);
    ASSERT_TRUE(kept.has_value());
    bytes += static_cast<std::int64_t>(kept->size());
    rollout::TrajectoryExpectation e;
    e.task_id = keep[b].id;
    e.run_id = kRunId;
    e.iteration = 1;
    e.prompt_index = keep[b].task.prompt_index;
    e.seed = keep[b].task.seed;
    e.weights_version = 0;
    e.newest_version = 1;
    e.sampler = sampler;
    e.window = window;
    e.latent_shape = {3, 32, 32};
    const auto r = rollout::accept_trajectory(*kept, e, published, torch::TensorOptions());
    const auto i = static_cast<std::int64_t>(b);
    EXPECT_TRUE(
        torch::equal(r.latents, reference.latents[i].slice(0, window.begin, window.end + 1)));
    EXPECT_TRUE(
        torch::equal(r.log_probs, reference.log_probs[i].slice(0, window.begin, window.end)));
    EXPECT_EQ(result(keep[b].id)->weights_version_used, 0);
  }
  EXPECT_EQ(w->metrics().trajectories_kept.value(), 4);
  EXPECT_EQ(w->metrics().trajectory_bytes.value(), static_cast<double>(bytes));
  std::cout << "[ info     ] kept trajectory of " << window.size()
            << " steps (micro preset): " << bytes / 4 << " bytes\n";

  // Tasks that do not ask keep nothing.
  testing::enqueue(*queue_, plain, key());
  ASSERT_TRUE(wait_for([&] { return all_done(plain); }, kWait));
  for (const auto& t : plain)
    EXPECT_FALSE(trajectories.get(t.id).has_value()) << t.id;

  // A task's own bound overrides the explorer's (offload asks for exactly v_1): with only v_0
  // published the explorer, whose bound is 1, gives it back instead of using v_0.
  auto exact = testing::seed_tasks(kRunId, 3, 1, 2, 1, kSteps);
  for (auto& t : exact)
    t.task.max_staleness = 0;
  const double released = w->metrics().tasks_released.value();
  testing::enqueue(*queue_, exact, key());
  ASSERT_TRUE(wait_for([&] { return w->metrics().tasks_released.value() >= released + 2; }, kWait));
  for (const auto& t : exact)
    EXPECT_FALSE(result(t.id).has_value()) << t.id;
  publish(1, *p1);
  ASSERT_TRUE(wait_for([&] { return all_done(exact); }, kWait));
  EXPECT_EQ(versions_of(exact), (std::vector<std::int64_t>{1, 1}));
}

TEST_F(ExplorerTest, FetchesNewerWeightsOnlyWhenATaskNeedsThem) {
  auto p0 = testing::micro_policy(3);
  auto p1 = testing::micro_policy(4);
  auto p2 = testing::micro_policy(5);
  publish(0, *p0);
  DenseReward dense;
  auto o = options("a");
  o.chunk = 1;  // compare against batch-of-one references
  o.max_staleness = 1;
  auto w = worker(o);
  w->start();

  const auto t0 = testing::seed_tasks(kRunId, 1, 1, 2, 0, kSteps);
  testing::enqueue(*queue_, t0, key());
  ASSERT_TRUE(wait_for([&] { return all_done(t0); }, kWait));
  EXPECT_EQ(versions_of(t0), (std::vector<std::int64_t>{0, 0}));
  EXPECT_EQ(rewards_of(t0), testing::reference_rewards(*p0, t0, 1, dense));

  // v1 exists, but tasks asking for v1 may use v0 (one version stale): no fetch.
  publish(1, *p1);
  const auto t1 = testing::seed_tasks(kRunId, 2, 1, 2, 1, kSteps);
  testing::enqueue(*queue_, t1, key());
  ASSERT_TRUE(wait_for([&] { return all_done(t1); }, kWait));
  EXPECT_EQ(versions_of(t1), (std::vector<std::int64_t>{0, 0}));
  EXPECT_EQ(w->metrics().weights_loaded.value(), 1);

  // Tasks asking for v2 need >= v1: the newest published (v1) is fetched.
  const auto t2 = testing::seed_tasks(kRunId, 3, 1, 2, 2, kSteps);
  testing::enqueue(*queue_, t2, key());
  ASSERT_TRUE(wait_for([&] { return all_done(t2); }, kWait));
  EXPECT_EQ(versions_of(t2), (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(rewards_of(t2), testing::reference_rewards(*p1, t2, 1, dense));
  EXPECT_EQ(w->metrics().weights_version.value(), 1);

  // Tasks asking for v3 need v2, not published yet: released and retried, never run on v1.
  const auto t3 = testing::seed_tasks(kRunId, 4, 1, 2, 3, kSteps);
  testing::enqueue(*queue_, t3, key());
  ASSERT_TRUE(wait_for([&] { return w->metrics().tasks_released.value() >= 4; }, kWait));
  EXPECT_FALSE(queue_->result(t3[0].id).has_value());
  EXPECT_FALSE(queue_->result(t3[1].id).has_value());
  publish(2, *p2);
  ASSERT_TRUE(wait_for([&] { return all_done(t3); }, kWait));
  EXPECT_EQ(versions_of(t3), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(rewards_of(t3), testing::reference_rewards(*p2, t3, 1, dense));
  EXPECT_EQ(w->metrics().weights_loaded.value(), 3);
  expect_results_match(t3, o.max_staleness);
}

TEST_F(ExplorerTest, CorruptWeightsChunkIsDetectedAndNeverUsed) {
  auto p0 = testing::micro_policy(6);
  auto p1 = testing::micro_policy(7);
  auto p2 = testing::micro_policy(8);
  publish(0, *p0);
  publish(1, *p1);
  const auto manifest = store_->manifest(1);
  ASSERT_TRUE(manifest.has_value());
  ASSERT_GE(manifest->chunks, 2u);
  {  // flip one byte of chunk 1 of v1, keeping its length
    redis::RedisClient client(redis());
    const std::string key = store_->chunk_key(1, 1);
    std::string chunk = client.command({"GET", key}).as_string();
    chunk[chunk.size() / 2] ^= 0x5a;
    client.command({"SET", key, chunk});
  }
  EXPECT_THROW(store_->fetch(1), store::ChecksumMismatch);

  DenseReward dense;
  auto o = options("a");
  o.chunk = 1;
  o.max_staleness = 0;
  auto w = worker(o);
  w->start();
  const auto tasks = testing::seed_tasks(kRunId, 2, 1, 2, 1, kSteps);  // need exactly v1+
  testing::enqueue(*queue_, tasks, key());
  ASSERT_TRUE(wait_for([&] { return w->metrics().weights_corrupt.value() >= 2; }, kWait));
  EXPECT_FALSE(queue_->result(tasks[0].id).has_value());
  EXPECT_FALSE(queue_->result(tasks[1].id).has_value());
  EXPECT_EQ(w->metrics().weights_loaded.value(), 0);
  EXPECT_EQ(w->metrics().weights_version.value(), -1);

  publish(2, *p2);
  ASSERT_TRUE(wait_for([&] { return all_done(tasks); }, kWait));
  EXPECT_EQ(versions_of(tasks), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(rewards_of(tasks), testing::reference_rewards(*p2, tasks, 1, dense));
  EXPECT_EQ(w->metrics().weights_loaded.value(), 1);
}

// A weights version whose blob is NaN loads fine (its checksum is right) and every sample it makes
// is not finite: each task fails, again and again until dead-lettered. The explorer says which
// version: one error line at the 3rd failure on it, then at every doubling (6, 12), not one per
// failure and not none.
TEST_F(ExplorerTest, RepeatedFailuresOnOneWeightsVersionAreLoggedWithTheVersion) {
  auto nan = testing::micro_policy(3);
  {
    torch::NoGradGuard no_grad;
    for (auto& w : nan->model()->parameters())
      w.fill_(std::numeric_limits<float>::quiet_NaN());
  }
  publish(0, *nan);
  spotlight::testing::LogCapture errors(log::Level::kError);
  auto w = worker(options("a"));
  w->start();
  const auto tasks = testing::seed_tasks(kRunId, 1, 1, 4, 0, kSteps);
  testing::enqueue(*queue_, tasks, key());
  ASSERT_TRUE(wait_for([&] { return queue_->stats().dead_letters == 4; }, kWait));
  w->stop();
  EXPECT_EQ(w->metrics().non_finite_samples.value(), 12);  // 4 tasks x max_deliveries 3
  const auto lines = errors.containing("weights version 0: ");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[0].find("weights version 0: 3 task failures with it"), std::string::npos)
      << lines[0];
  EXPECT_NE(lines[0].find("not finite"), std::string::npos) << lines[0];
  EXPECT_NE(lines[2].find("weights version 0: 12 task failures"), std::string::npos) << lines[2];
}

// Weights whose manifest is not signed with the run's key are not the trainer's: an explorer whose
// store checks signatures refuses them (counted, one error line naming the version) and runs its
// tasks once the trainer publishes signed weights.
TEST_F(ExplorerTest, WeightsWhoseManifestIsNotSignedWithTheRunsKeyAreRefused) {
  auto p1 = testing::micro_policy(6);
  auto p2 = testing::micro_policy(7);
  const run::TaskKey run_key = key();
  store_->publish(1, p1->weights_bytes());  // unsigned: not the trainer's
  auto checked = weight_options();
  checked.manifest_key = run::manifest_key_source(redis(), keys_.prefix, /*create=*/false);
  auto o = options("a");
  o.max_staleness = 0;
  spotlight::testing::LogCapture errors(log::Level::kError);
  auto w = std::make_unique<Worker>(redis(), queue_options(), checked, o,
                                    std::make_unique<DenseReward>());
  w->start();
  const auto tasks = testing::seed_tasks(kRunId, 2, 1, 2, 1, kSteps);  // need exactly v1+
  testing::enqueue(*queue_, tasks, run_key);
  ASSERT_TRUE(wait_for([&] { return w->metrics().weights_untrusted.value() >= 1; }, kWait));
  EXPECT_FALSE(queue_->result(tasks[0].id).has_value());
  EXPECT_EQ(w->metrics().weights_loaded.value(), 0);
  ASSERT_FALSE(errors.containing("weights version 1 rejected (untrusted manifest)").empty());
  EXPECT_NE(errors.containing("weights version 1 rejected")[0].find("unsigned"), std::string::npos);

  auto trainer_options = weight_options();
  trainer_options.manifest_key = run::manifest_key_source(redis(), keys_.prefix, /*create=*/true);
  store::RedisWeightStore(redis(), trainer_options).publish(2, p2->weights_bytes());
  ASSERT_TRUE(wait_for([&] { return all_done(tasks); }, kWait));
  EXPECT_EQ(versions_of(tasks), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(errors.containing("weights version 1 rejected").size(), 1u) << "logged once";
}

// Issue #13 (5): a forged but well-formed task (3000 sampler steps, written into the stream) was
// run and its result stored. Tasks not signed by the run's planner are now dead-lettered at their
// first delivery and never run; tasks it could not have made (outside the run's limits), tasks
// signed with another key and undecodable bytes are retried (another explorer, configured
// otherwise, may take them) and dead-lettered after max_deliveries. Good tasks complete.
TEST_F(ExplorerTest, ForgedMalformedAndOutOfLimitsTasksAreRefusedWhileGoodOnesComplete) {
  auto p0 = testing::micro_policy(9);
  publish(0, *p0);
  const auto all = testing::seed_tasks(kRunId, 1, 1, 11, 0, kSteps);
  const std::vector<TaskSpec> good(all.begin(), all.begin() + 3);
  testing::enqueue(*queue_, good, key());
  std::map<std::string, std::string> bad;  // task id -> payload
  bad["bad/garbage"] = "not msgpack at all";
  wire::SeedTask forged = all[7].task;  // unsigned, 3000 steps: the forged task
  forged.sampler_steps = 3000;
  bad[all[7].id] = forged.encode();
  wire::SeedTask altered = all[8].task;  // a signed task, changed afterwards
  run::sign(altered, key());
  altered.sampler_steps = 3000;
  bad[all[8].id] = altered.encode();
  wire::SeedTask other_key = all[9].task;
  run::sign(other_key, run::TaskKey("another deployment's key"));
  bad[all[9].id] = other_key.encode();
  wire::SeedTask bad_prompt = all[10].task;  // signed by the run's key, yet outside its limits
  bad_prompt.prompt_text = "a purple unicorn";
  run::sign(bad_prompt, key());
  bad[all[10].id] = bad_prompt.encode();
  wire::SeedTask other_run = all[6].task;
  other_run.run_id = "another-run";
  run::sign(other_run, key());
  bad[all[6].id] = other_run.encode();
  for (const auto& [id, payload] : bad)
    queue_->enqueue(id, payload);

  auto w = worker(options("a"));
  w->start();
  ASSERT_TRUE(wait_for(
      [&] { return queue_->dead_letters(10).size() == bad.size() && all_done(good); }, kWait));
  std::map<std::string, queue::DeadLetter> dead;
  for (auto& d : queue_->dead_letters(10))
    dead[d.task_id] = d;
  const std::map<std::string, std::pair<std::string, int>> expected = {
      // id -> (in the error, deliveries)
      {"bad/garbage", {"wire:", 3}},       {all[7].id, {"(unsigned)", 1}},
      {all[8].id, {"(bad_signature)", 1}}, {all[9].id, {"(other_key)", 3}},
      {all[10].id, {"prompt_text", 3}},    {all[6].id, {"run_id", 3}},
  };
  for (const auto& [id, want] : expected) {
    SCOPED_TRACE(id);
    ASSERT_TRUE(dead.count(id));
    EXPECT_NE(dead[id].error.find(want.first), std::string::npos) << dead[id].error;
    EXPECT_EQ(dead[id].deliveries, want.second);
    EXPECT_FALSE(queue_->result(id).has_value());
  }
  const auto& m = w->metrics();
  EXPECT_EQ(m.refused("unsigned").value(), 1);
  EXPECT_EQ(m.refused("bad_signature").value(), 1);
  EXPECT_EQ(m.refused("malformed").value(), 3);
  EXPECT_EQ(m.refused("other_key").value(), 3);
  EXPECT_EQ(m.refused("out_of_limits").value(), 6);
  EXPECT_EQ(m.malformed_tasks.value(), 14);
  // None of the bad tasks was sampled: only the good ones' steps were computed.
  EXPECT_EQ(m.sample_steps.value(), static_cast<double>(good.size() * kSteps));
  expect_results_match(good, 1);
  EXPECT_EQ(queue_->stats().length, 0);
}

// A reward service that answers with nonsense: 1e30 and -5 (finite, outside the range it
// declares, [-1, 1]) and NaN. Those tasks are dead-lettered at once as reward faults, counted by
// reason and logged with the service's endpoint; only the in-range reward (-0.5: outside the
// default [0, 1], inside the declared range) becomes a result the trainer can read.
TEST_F(ExplorerTest, RewardsOutsideTheDeclaredRangeOrNotFiniteDeadLetterTheirTasks) {
  const std::vector<double> answers = {1e30, -5.0, std::nan(""), -0.5};
  rpc::RpcServer rogue([&](std::vector<rpc::RpcRequest> batch) {
    std::vector<rpc::RpcReply> out;
    for (const auto& r : batch) {
      const auto request = wire::RewardRequest::decode(r.payload);
      wire::RewardReply reply;
      reply.request_id = request.request_id;
      for (std::int64_t i = 0; i < request.count; ++i) {
        reply.rewards.push_back(answers[static_cast<std::size_t>(i) % answers.size()]);
        reply.correct.push_back(false);
      }
      reply.range = {-1.0, 1.0};
      out.emplace_back(reply.encode());
    }
    return out;
  });
  const std::string endpoint = rogue.bind("tcp://127.0.0.1:*");
  std::jthread serving([&](std::stop_token stop) { rogue.run(stop); });

  std::mutex mutex;
  std::vector<std::string> lines;
  const auto previous = log::set_sink([&](log::Level, std::string_view line) {
    std::lock_guard lock(mutex);
    lines.emplace_back(line);
  });
  struct RestoreSink {
    log::Sink sink;
    ~RestoreSink() { log::set_sink(sink); }
  } restore{previous};

  auto p0 = testing::micro_policy(1);
  publish(0, *p0);
  const auto tasks = testing::seed_tasks(kRunId, 1, 1, 4, 0, kSteps);  // one chunk of 4
  ASSERT_EQ(testing::enqueue(*queue_, tasks, key()), 4);
  reward::RemoteRewardOptions remote;
  remote.endpoint = endpoint;
  auto w = worker(options("a"), std::make_unique<reward::RemoteReward>(remote));
  w->start();
  ASSERT_TRUE(wait_for(
      [&] {
        return queue_->dead_letters(10).size() == 3 && queue_->stats().results == 1 &&
               queue_->stats().length == 0;
      },
      kWait));
  w->stop();

  std::map<std::string, int> reasons;
  for (const auto& d : queue_->dead_letters(10)) {
    SCOPED_TRACE(d.error);
    EXPECT_EQ(d.deliveries, 1);  // at once: rescoring the same image gives the same reward
    EXPECT_NE(d.error.find("remote(" + endpoint + ")"), std::string::npos);
    EXPECT_FALSE(queue_->result(d.task_id).has_value());
    for (const char* reason : {"(out_of_range)", "(non_finite)"}) {
      if (d.error.find(std::string("reward fault ") + reason) != std::string::npos) {
        ++reasons[reason];
      }
    }
  }
  EXPECT_EQ(reasons["(out_of_range)"], 2);
  EXPECT_EQ(reasons["(non_finite)"], 1);
  std::vector<double> recorded;
  for (const auto& t : tasks) {
    if (auto r = result(t.id)) recorded.push_back(r->reward);
  }
  EXPECT_EQ(recorded, std::vector<double>{-0.5});
  EXPECT_EQ(w->metrics().reward_faults("out_of_range").value(), 2);
  EXPECT_EQ(w->metrics().reward_faults("non_finite").value(), 1);
  EXPECT_EQ(w->metrics().tasks_completed.value(), 1);
  // Logged with the endpoint (throttled: log::Throttle, tested on its own).
  std::lock_guard lock(mutex);
  int fault_lines = 0;
  for (const auto& line : lines) {
    if (line.find("reward fault") != std::string::npos &&
        line.find(endpoint) != std::string::npos) {
      ++fault_lines;
    }
  }
  EXPECT_GE(fault_lines, 1);
}

TEST_F(ExplorerTest, TwoExplorersShareAQueueWithOneResultPerTask) {
  auto p0 = testing::micro_policy(10);
  publish(0, *p0);
  const auto tasks = testing::seed_tasks(kRunId, 1, 4, 4, 0, kSteps);
  auto oa = options("a");
  auto ob = options("b");
  oa.batch = ob.batch = 2;
  auto a = worker(oa);
  auto b = worker(ob);
  a->start();
  b->start();
  testing::enqueue(*queue_, tasks, key());
  ASSERT_TRUE(wait_for([&] { return all_done(tasks); }, kWait));
  a->stop();
  b->stop();
  expect_results_match(tasks, 1);
  for (const auto& t : tasks) {
    const auto who = result(t.id)->explorer_id;
    EXPECT_TRUE(who == "a" || who == "b") << who;
  }
  // One recorded result per task; nothing left in the queue, nothing acknowledged twice.
  EXPECT_EQ(a->metrics().tasks_completed.value() + b->metrics().tasks_completed.value(), 16);
  const auto stats = queue_->stats();
  EXPECT_EQ(stats.results, 16);
  EXPECT_EQ(stats.acked_total, 16);
  EXPECT_EQ(stats.length, 0);
}

TEST_F(ExplorerTest, StopReleasesLeasedTasksForAnotherExplorer) {
  auto p0 = testing::micro_policy(11);
  publish(0, *p0);
  const auto tasks = testing::seed_tasks(kRunId, 1, 1, 4, 0, kSteps);
  testing::enqueue(*queue_, tasks, key());

  auto oa = options("a");
  oa.chunk = 1;  // four chunks: the first is in flight when the stop comes
  auto gate = std::make_unique<GateReward>();
  GateReward* gate_ptr = gate.get();
  auto a = worker(oa, std::move(gate));
  a->start();
  ASSERT_TRUE(gate_ptr->wait_entered(kWait));
  EXPECT_EQ(queue_->stats().leased, 4);  // a holds all four
  const auto requested = std::chrono::steady_clock::now();
  a->request_stop();
  gate_ptr->open();
  EXPECT_EQ(a->stop(), ExitReason::kStopped);
  EXPECT_LT(std::chrono::steady_clock::now() - requested, oa.grace_period);

  // The chunk in flight was finished; the other three were given back, none lost.
  EXPECT_EQ(a->metrics().tasks_completed.value(), 1);
  EXPECT_EQ(a->metrics().tasks_released.value(), 3);
  EXPECT_EQ(queue_->stats().results, 1);
  EXPECT_EQ(queue_->stats().length, 3);

  auto b = worker(options("b"));
  b->start();
  ASSERT_TRUE(wait_for([&] { return all_done(tasks); }, kWait));
  EXPECT_EQ(b->metrics().tasks_completed.value(), 3);
  EXPECT_EQ(result(tasks[0].id)->explorer_id, "a");
  for (std::size_t i = 1; i < tasks.size(); ++i)
    EXPECT_EQ(result(tasks[i].id)->explorer_id, "b");
  expect_results_match(tasks, 1);
  EXPECT_EQ(queue_->stats().acked_total, 4);
}

// Issue #4: a notice mid-chunk stops at the next step boundary, commits every sample of the
// chunk (latent, step, seed, weights version) before releasing it, and the next explorer resumes
// each from its step: the same images (rewards bit for bit) as an uninterrupted run with the same
// weights and batch, and no sampler step computed twice.
TEST_F(ExplorerTest, NoticeCommitsInFlightSamplesAndAnotherExplorerResumesThemBitEqual) {
  constexpr int kLongSteps = 8;
  constexpr int kStopStep = 3;
  auto p0 = testing::micro_policy(13);
  publish(0, *p0);
  DenseReward dense;
  const auto tasks = testing::seed_tasks(kRunId, 1, 2, 2, 0, kLongSteps);
  sampler::SamplerOptions sde;
  sde.steps = kLongSteps;
  const auto expect = testing::reference_rewards(*p0, tasks, 4, dense, sde);
  testing::enqueue(*queue_, tasks, key());

  auto a = worker(options("a"));
  a->stop_after_steps(4 * kStopStep);
  a->start();
  ASSERT_TRUE(wait_for([&] { return a->returned(); }, kWait));
  EXPECT_EQ(a->stop(), ExitReason::kStopped);
  EXPECT_EQ(a->metrics().inflight_commits.value(), 4);
  EXPECT_EQ(a->metrics().tasks_released.value(), 4);
  EXPECT_EQ(a->metrics().tasks_completed.value(), 0);
  EXPECT_EQ(a->metrics().sample_steps.value(), 4 * kStopStep);
  for (const auto& t : tasks) {
    const auto bytes = kv_->get(keys_.inflight(t.id));
    ASSERT_TRUE(bytes.has_value()) << t.id;
    const auto commit = wire::InflightCommit::decode(*bytes);
    EXPECT_EQ(commit.task_id, t.id);
    EXPECT_EQ(commit.seed, t.task.seed);
    EXPECT_EQ(commit.step_index, kStopStep);
    EXPECT_EQ(commit.weights_version, 0);
    EXPECT_EQ(commit.latent_shape.size(), 3u);
  }

  auto b = worker(options("b"));
  b->start();
  ASSERT_TRUE(wait_for([&] { return all_done(tasks); }, kWait));
  EXPECT_EQ(b->metrics().resumes.value(), 4);
  EXPECT_EQ(b->metrics().discarded_commits.value(), 0);
  EXPECT_EQ(b->metrics().sample_steps.value(), 4 * (kLongSteps - kStopStep));
  EXPECT_EQ(rewards_of(tasks), expect);  // bit for bit
  for (const auto& t : tasks) {
    EXPECT_EQ(result(t.id)->explorer_id, "b");
    EXPECT_FALSE(kv_->get(keys_.inflight(t.id)).has_value()) << "commit left behind";
  }
  // Across both explorers every step was computed once.
  EXPECT_EQ(kv_->counter(keys_.sample_steps), 4 * kLongSteps);
  EXPECT_EQ(kv_->counter(keys_.resumed_steps), 4 * kStopStep);
  EXPECT_EQ(queue_->stats().acked_total, 4);
}

TEST_F(ExplorerTest, WithoutCommitsAStoppedChunkRestartsFromStepZero) {
  constexpr int kLongSteps = 8;
  constexpr int kStopStep = 3;
  auto p0 = testing::micro_policy(14);
  publish(0, *p0);
  DenseReward dense;
  const auto tasks = testing::seed_tasks(kRunId, 1, 2, 2, 0, kLongSteps);
  sampler::SamplerOptions sde;
  sde.steps = kLongSteps;
  const auto expect = testing::reference_rewards(*p0, tasks, 4, dense, sde);
  testing::enqueue(*queue_, tasks, key());

  auto oa = options("a");
  oa.commit_inflight = false;
  auto a = worker(oa);
  a->stop_after_steps(4 * kStopStep);
  a->start();
  ASSERT_TRUE(wait_for([&] { return a->returned(); }, kWait));
  EXPECT_EQ(a->stop(), ExitReason::kStopped);
  EXPECT_EQ(a->metrics().inflight_commits.value(), 0);
  EXPECT_EQ(a->metrics().tasks_released.value(), 4);

  auto b = worker(options("b"));
  b->start();
  ASSERT_TRUE(wait_for([&] { return all_done(tasks); }, kWait));
  EXPECT_EQ(b->metrics().resumes.value(), 0);
  EXPECT_EQ(rewards_of(tasks), expect);
  // The stopped steps were computed again.
  EXPECT_EQ(kv_->counter(keys_.sample_steps), 4 * (kLongSteps + kStopStep));
}

// A newer version published meanwhile does not waste the commits: the next explorer loads the
// version they were made with (still within the staleness bound) and resumes them.
TEST_F(ExplorerTest, ANewerVersionMeanwhileStillResumesWithTheCommittedOne) {
  constexpr int kLongSteps = 8;
  auto p0 = testing::micro_policy(15);
  auto p1 = testing::micro_policy(16);
  publish(0, *p0);
  DenseReward dense;
  const auto tasks = testing::seed_tasks(kRunId, 1, 2, 2, 0, kLongSteps);
  sampler::SamplerOptions sde;
  sde.steps = kLongSteps;
  const auto expect = testing::reference_rewards(*p0, tasks, 4, dense, sde);
  testing::enqueue(*queue_, tasks, key());
  auto a = worker(options("a"));
  a->stop_after_steps(4 * 2);
  a->start();
  ASSERT_TRUE(wait_for([&] { return a->returned(); }, kWait));
  EXPECT_EQ(a->stop(), ExitReason::kStopped);
  EXPECT_EQ(a->metrics().inflight_commits.value(), 4);

  publish(1, *p1);  // newest now; a fresh explorer would otherwise load it
  auto b = worker(options("b"));
  b->start();
  ASSERT_TRUE(wait_for([&] { return all_done(tasks); }, kWait));
  EXPECT_EQ(b->metrics().resumes.value(), 4);
  EXPECT_EQ(b->metrics().discarded_commits.value(), 0);
  EXPECT_EQ(versions_of(tasks), std::vector<std::int64_t>(4, 0));
  EXPECT_EQ(rewards_of(tasks), expect);
  EXPECT_EQ(kv_->counter(keys_.sample_steps), 4 * kLongSteps);
}

// A commit made with weights older than the staleness bound allows is discarded: the task
// restarts from step 0 with the newest version.
TEST_F(ExplorerTest, ACommitOlderThanTheStalenessBoundIsDiscarded) {
  constexpr int kLongSteps = 8;
  auto p0 = testing::micro_policy(17);
  auto p1 = testing::micro_policy(18);
  auto p2 = testing::micro_policy(19);
  publish(0, *p0);
  DenseReward dense;
  // Tasks asking for version 2; explorer a tolerates staleness 2 and samples them with v0.
  const auto tasks = testing::seed_tasks(kRunId, 3, 2, 2, 2, kLongSteps);
  sampler::SamplerOptions sde;
  sde.steps = kLongSteps;
  testing::enqueue(*queue_, tasks, key());
  auto oa = options("a");
  oa.max_staleness = 2;
  auto a = worker(oa);
  a->stop_after_steps(4 * 2);
  a->start();
  ASSERT_TRUE(wait_for([&] { return a->returned(); }, kWait));
  EXPECT_EQ(a->stop(), ExitReason::kStopped);
  EXPECT_EQ(a->metrics().inflight_commits.value(), 4);

  publish(1, *p1);
  publish(2, *p2);
  const auto expect = testing::reference_rewards(*p2, tasks, 4, dense, sde);
  auto b = worker(options("b"));  // staleness 1: needs >= v1, the v0 commits cannot be used
  b->start();
  ASSERT_TRUE(wait_for([&] { return all_done(tasks); }, kWait));
  EXPECT_EQ(b->metrics().resumes.value(), 0);
  EXPECT_EQ(b->metrics().discarded_commits.value(), 4);
  EXPECT_EQ(versions_of(tasks), std::vector<std::int64_t>(4, 2));
  EXPECT_EQ(rewards_of(tasks), expect);
  for (const auto& t : tasks)
    EXPECT_FALSE(kv_->get(keys_.inflight(t.id)).has_value());
}

TEST_F(ExplorerTest, SurvivesARedisOutage) {
  auto p0 = testing::micro_policy(12);
  publish(0, *p0);
  auto w = worker(options("a"));
  w->start();
  const auto before = testing::seed_tasks(kRunId, 1, 1, 2, 0, kSteps);
  testing::enqueue(*queue_, before, key());
  ASSERT_TRUE(wait_for([&] { return all_done(before); }, kWait));

  server_->kill();
  ASSERT_TRUE(wait_for([&] { return w->metrics().redis_errors.value() >= 2; }, kWait));
  EXPECT_FALSE(w->returned());
  server_->start();
  const auto after = testing::seed_tasks(kRunId, 2, 1, 2, 0, kSteps);
  testing::enqueue(*queue_, after, key());
  ASSERT_TRUE(wait_for([&] { return all_done(after); }, kWait));
  expect_results_match(after, 1);
}

TEST(ExplorerOptionsTest, ValidateNamesTheField) {
  ExplorerOptions o;
  o.run_id = "r";
  o.id = "";
  try {
    o.validate();
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("ExplorerOptions.id"), std::string::npos);
  }
  o.id = "~reserved";
  EXPECT_THROW(o.validate(), std::invalid_argument);
  o.id = "x";
  o.batch = 0;
  EXPECT_THROW(o.validate(), std::invalid_argument);
  o.batch = 1;
  EXPECT_THROW(o.validate(), std::invalid_argument);  // limits of another run
  o.limits.run_id = o.run_id;
  EXPECT_NO_THROW(o.validate());
}

}  // namespace
}  // namespace spotlight::explorer
