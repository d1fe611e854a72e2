// The node scheduler with real rank processes: a group survives the SIGKILL of a member by
// regrouping its survivors (same processes, new generation), mid-job included, and its samples
// equal the single-process sampler's.
#include "services/node/node_scheduler.hpp"

#include <algorithm>
#include <csignal>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/policy/policy.hpp"
#include "common/store/redis_weight_store.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"

namespace spotlight::node {
namespace {

constexpr const char* kPreset = "micro";

policy::Policy make_policy(const std::string& preset = kPreset) {
  policy::PolicyOptions options;
  options.preset = preset;
  options.init_seed = 5;
  policy::Policy p(options, policy::task_options_for(model::mmdit_preset(preset)));
  torch::NoGradGuard no_grad;
  torch::manual_seed(5);
  // A fresh model's output is 0 (adaLN-zero): perturb it so samples depend on every weight.
  for (auto& w : p.model()->parameters())
    w.add_(torch::randn_like(w) * 0.05);
  p.model()->eval();
  return p;
}

SampleRequest make_request() {
  SampleRequest r;
  r.prompts = {"a red square", "two blue discs"};
  r.seeds = {17, 23};
  r.sampler.steps = 4;
  return r;
}

at::Tensor reference_latents(policy::Policy& policy, const SampleRequest& request) {
  std::vector<task::Prompt> prompts;
  for (const auto& text : request.prompts)
    prompts.push_back(*task::parse_prompt(text));
  return policy.sample(prompts, request.seeds, request.sampler, 2)[0].final().contiguous();
}

NodeOptions node_options(int ranks, int sp_size, const std::string& preset = kPreset) {
  NodeOptions o;
  o.rank_binary = testing::binary_path("services/node/spotlight-node");
  o.ranks = ranks;
  o.sp_size = sp_size;
  o.preset = preset;
  o.op_timeout = std::chrono::milliseconds(3000);
  return o;
}

void expect_close(const at::Tensor& got, const at::Tensor& want) {
  ASSERT_TRUE(got.defined());
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(torch::allclose(got, want, 1e-4, 1e-5))
      << "max diff " << (got - want).abs().max().item<double>();
}

bool contains(const std::vector<pid_t>& pids, pid_t pid) {
  return std::find(pids.begin(), pids.end(), pid) != pids.end();
}

TEST(NodeScheduler, RegroupsSurvivorsAndSpareAfterSigkill) {
  auto policy = make_policy();
  const auto request = make_request();
  const auto reference = reference_latents(policy, request);
  metrics::Registry registry("explorer");
  NodeScheduler node(node_options(3, 2), &registry);
  node.start();
  EXPECT_EQ(node.load_weights(policy.weights_bytes()).ranks, 3);
  const auto first = node.regroup();
  EXPECT_EQ(first.size, 2);
  expect_close(node.sample(request).latents, reference);

  const auto before = node.group_pids();
  const auto all_before = node.all_pids();
  ASSERT_EQ(before.size(), 2u);
  ASSERT_EQ(kill(before[1], SIGKILL), 0);
  EXPECT_EQ(node.await_loss(std::chrono::seconds(30)), 1);
  const auto second = node.regroup();
  EXPECT_EQ(second.size, 2);  // the survivor and the spare
  EXPECT_GT(second.generation, first.generation);
  const auto after = node.group_pids();
  EXPECT_TRUE(contains(after, before[0])) << "the survivor was replaced, not kept";
  EXPECT_FALSE(contains(after, before[1]));
  for (pid_t pid : after)
    EXPECT_TRUE(contains(all_before, pid)) << "a process was restarted";
  expect_close(node.sample(request).latents, reference);

  // The lost rank is replaced by a new process that copies the weights from a peer.
  const auto copy = node.replenish();
  EXPECT_EQ(copy.source, "shm");
  EXPECT_EQ(copy.ranks, 1);
  EXPECT_EQ(node.all_pids().size(), 3u);
  // ... and it holds the right weights: kill both members so that it must serve.
  for (pid_t pid : node.group_pids())
    kill(pid, SIGKILL);
  EXPECT_EQ(node.await_loss(std::chrono::seconds(30), 2), 2);
  const auto result = node.sample(request);
  EXPECT_EQ(node.group_size(), 1);  // only the replacement is left
  expect_close(result.latents, reference);
}

TEST(NodeScheduler, SampleSurvivesAMemberKilledMidJob) {
  auto policy = make_policy();
  auto request = make_request();
  request.sampler.steps = 8;
  const auto reference = reference_latents(policy, request);
  NodeScheduler node(node_options(3, 2));
  node.start();
  node.load_weights(policy.weights_bytes());
  node.regroup();
  const auto victim = node.group_pids()[1];
  bool killed = false;
  node.after_dispatch = [&] {
    if (!killed) kill(victim, SIGKILL);
    killed = true;
  };
  const auto result = node.sample(request);
  EXPECT_TRUE(killed);
  EXPECT_GE(result.regroups, 1);
  EXPECT_EQ(result.attempts, 2);
  EXPECT_FALSE(contains(node.group_pids(), victim));
  EXPECT_EQ(node.group_size(), 2);
  expect_close(result.latents, reference);
}

TEST(NodeScheduler, AHungMemberIsKilledAndTheSampleRetried) {
  auto policy = make_policy();
  const auto request = make_request();
  const auto reference = reference_latents(policy, request);
  NodeScheduler node(node_options(3, 2));
  node.start();
  node.load_weights(policy.weights_bytes());
  node.regroup();
  const auto hung = node.group_pids()[1];
  ASSERT_EQ(kill(hung, SIGSTOP), 0);  // alive but silent: its peer's collectives time out
  const auto result = node.sample(request);
  EXPECT_GE(result.regroups, 1);
  EXPECT_FALSE(contains(node.all_pids(), hung)) << "the hung rank was kept";
  expect_close(result.latents, reference);
}

TEST(NodeScheduler, ShrinksTheGroupWhenNoSpareIsLeft) {
  auto policy = make_policy();
  const auto request = make_request();
  const auto reference = reference_latents(policy, request);
  NodeScheduler node(node_options(2, 2));
  node.start();
  node.load_weights(policy.weights_bytes());
  node.regroup();
  kill(node.group_pids()[0], SIGKILL);
  EXPECT_EQ(node.await_loss(std::chrono::seconds(30)), 1);
  EXPECT_EQ(node.regroup().size, 1);
  expect_close(node.sample(request).latents, reference);  // same seed, same image at SP 1
}

TEST(NodeScheduler, FourRankProcessesGiveTheSingleProcessImageAndShrinkToTwo) {
  // The tiny preset has 4 heads: SP 4, and after a loss the largest size they divide by (2).
  auto policy = make_policy("tiny");
  auto request = make_request();
  request.sampler.steps = 2;
  const auto reference = reference_latents(policy, request);
  NodeScheduler node(node_options(4, 4, "tiny"));
  node.start();
  node.load_weights(policy.weights_bytes());
  EXPECT_EQ(node.regroup().size, 4);
  expect_close(node.sample(request).latents, reference);
  kill(node.group_pids()[2], SIGKILL);
  ASSERT_EQ(node.await_loss(std::chrono::seconds(30)), 1);
  EXPECT_EQ(node.regroup().size, 2);  // 3 survivors, 4 heads
  expect_close(node.sample(request).latents, reference);
}

TEST(NodeScheduler, RanksLoadWeightsFromTheStore) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  testing::RedisServer redis;
  auto policy = make_policy();
  store::WeightStoreOptions weights;
  weights.key_prefix = "sp-test";
  store::RedisWeightStore store(redis.client_options(), weights);
  store.publish(4, policy.weights_bytes());

  NodeScheduler node(node_options(2, 2));
  node.start();
  WeightsLocation where;
  where.redis_host = "127.0.0.1";
  where.redis_port = redis.client_options().port;
  where.key_prefix = weights.key_prefix;
  where.version = 4;
  const auto load = node.load_weights(where);
  EXPECT_EQ(load.source, "store");
  EXPECT_EQ(load.ranks, 2);
  node.regroup();
  const auto reference = reference_latents(policy, make_request());
  expect_close(node.sample(make_request()).latents, reference);

  // A replacement copies from a peer's export by default, or fetches from the store.
  for (auto source : {NodeScheduler::WeightsSource::kPeer, NodeScheduler::WeightsSource::kStore}) {
    kill(node.group_pids()[0], SIGKILL);
    ASSERT_EQ(node.await_loss(std::chrono::seconds(30)), 1);
    const auto copy = node.replenish(source);
    EXPECT_EQ(copy.source, source == NodeScheduler::WeightsSource::kPeer ? "shm" : "store");
    EXPECT_EQ(copy.ranks, 1);
    expect_close(node.sample(make_request()).latents, reference);
    EXPECT_EQ(node.group_size(), 2);
  }
  where.version = 5;  // absent
  EXPECT_THROW(node.load_weights(where), NodeError);
}

}  // namespace
}  // namespace spotlight::node
