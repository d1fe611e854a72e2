#include "services/reward/reward_service.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <future>
#include <iostream>
#include <latch>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/config/config.hpp"
#include "common/config/error.hpp"
#include "common/metrics/metrics.hpp"
#include "common/metrics/server.hpp"
#include "common/reward/remote_reward.hpp"
#include "common/reward/reward_function.hpp"
#include "common/rpc/client.hpp"
#include "common/rpc/errors.hpp"
#include "common/run/run_config.hpp"
#include "common/task/generator.hpp"
#include "common/task/render.hpp"
#include "common/task/task_config.hpp"
#include "common/wire/messages.hpp"
#include "services/reward/reward_config.hpp"
#include "tests/common/metrics/http_get.hpp"
#include "tests/support/process.hpp"
#include "tests/support/wait_for.hpp"

namespace spotlight::reward {
namespace {

using namespace std::chrono_literals;

const task::TaskOptions kTask{};  // 32x32

// A RewardService on tcp://127.0.0.1:* serving on its own thread; stops when destroyed.
class ServingReward {
 public:
  explicit ServingReward(RewardServiceOptions options = {},
                         std::unique_ptr<RewardFunction> reward = make_task_reward(kTask))
      : registry_(std::make_shared<metrics::Registry>("reward")),
        service_(std::move(reward), options, registry_),
        endpoint_(service_.bind("tcp://127.0.0.1:*")),
        thread_([this](std::stop_token st) { service_.run(st); }) {}

  const std::string& endpoint() const { return endpoint_; }
  RewardService& service() { return service_; }
  metrics::Registry& registry() { return *registry_; }
  double counter(const std::string& name, const metrics::Labels& labels = {}) {
    return registry_->counter(name, "", labels).value();
  }
  RemoteReward client(std::chrono::milliseconds timeout = 5s) {
    RemoteRewardOptions o;
    o.endpoint = endpoint_;
    o.rpc.timeout = timeout;
    return RemoteReward(o);
  }

 private:
  std::shared_ptr<metrics::Registry> registry_;
  RewardService service_;
  std::string endpoint_;
  std::jthread thread_;
};

struct Sample {
  std::vector<task::Prompt> prompts;
  std::vector<task::Image> images;
};

// `n` training prompts (every category appears for n >= 5 with high probability) with their
// ground-truth renders, or blank images.
Sample samples(int n, std::uint64_t first_seed, bool blank) {
  const task::PromptGenerator generator(kTask);
  Sample s;
  for (int i = 0; i < n; ++i) {
    const std::uint64_t seed = first_seed + static_cast<std::uint64_t>(i);
    s.prompts.push_back(generator.sample(seed));
    s.images.push_back(blank ? task::Image::blank(kTask.image_size, kTask.image_size)
                             : task::render(s.prompts.back(), seed, kTask));
  }
  return s;
}

wire::RewardRequest request_for(const Sample& s, const std::string& id) {
  wire::RewardRequest r;
  r.request_id = id;
  r.width = r.height = kTask.image_size;
  r.count = static_cast<std::int64_t>(s.images.size());
  for (std::size_t i = 0; i < s.images.size(); ++i) {
    r.prompts.push_back(s.prompts[i].text());
    r.images.insert(r.images.end(), s.images[i].rgb.begin(), s.images[i].rgb.end());
  }
  return r;
}

std::vector<Scored> local_scores(const Sample& s) {
  return make_task_reward(kTask)->score(s.prompts, s.images);
}

// Sends raw bytes; returns the decoded reply (the RPC itself must succeed).
wire::RewardReply raw_call(const std::string& endpoint, const std::string& payload) {
  rpc::RpcClientOptions o;
  o.timeout = 5s;
  rpc::RpcClient client(endpoint, o);
  return wire::RewardReply::decode(client.call(payload));
}

TEST(RemoteReward, ScoresRenderedImagesCorrectAndBlankImagesLow) {
  ServingReward server;
  RemoteReward remote = server.client();
  const Sample rendered = samples(25, 100, false);
  const auto good = remote.score(rendered.prompts, rendered.images);
  ASSERT_EQ(good.size(), rendered.images.size());
  const auto expected = local_scores(rendered);
  for (std::size_t i = 0; i < good.size(); ++i) {
    EXPECT_EQ(good[i].reward, 1.0) << rendered.prompts[i].text();
    EXPECT_TRUE(good[i].correct) << rendered.prompts[i].text();
    EXPECT_EQ(good[i].reward, expected[i].reward);
  }
  const Sample blank = samples(25, 100, true);
  const auto bad = remote.score(blank.prompts, blank.images);
  const auto expected_bad = local_scores(blank);
  ASSERT_EQ(bad.size(), blank.images.size());
  for (std::size_t i = 0; i < bad.size(); ++i) {
    EXPECT_LT(bad[i].reward, 0.25) << blank.prompts[i].text();
    EXPECT_FALSE(bad[i].correct) << blank.prompts[i].text();
    EXPECT_EQ(bad[i].reward, expected_bad[i].reward);
  }
  EXPECT_EQ(remote.score({}, {}).size(), 0u);
  EXPECT_EQ(server.counter("spotlight_reward_images_scored_total"), 50.0);
  EXPECT_EQ(server.counter("spotlight_reward_correct_total"), 25.0);
}

TEST(RemoteReward, SplitsLargeBatchesAndKeepsImageOrder) {
  ServingReward server;
  RemoteRewardOptions o;
  o.endpoint = server.endpoint();
  o.max_images_per_request = 3;
  RemoteReward remote(o);
  // Alternate rendered and blank images so that a reordering would show.
  Sample s = samples(8, 7, false);
  for (std::size_t i = 1; i < s.images.size(); i += 2) {
    s.images[i] = task::Image::blank(kTask.image_size, kTask.image_size);
  }
  const auto scores = remote.score(s.prompts, s.images);
  const auto expected = local_scores(s);
  ASSERT_EQ(scores.size(), expected.size());
  for (std::size_t i = 0; i < scores.size(); ++i) {
    EXPECT_EQ(scores[i].reward, expected[i].reward) << i;
    EXPECT_EQ(scores[i].correct, expected[i].correct) << i;
  }
  EXPECT_EQ(remote.counters().calls, 3u);  // 3 + 3 + 2
  EXPECT_EQ(server.counter("spotlight_reward_requests_total"), 3.0);
}

TEST(RemoteReward, RejectedRequestsThrowWithTheServicesReason) {
  ServingReward server;
  RemoteReward remote = server.client();
  const Sample s = samples(2, 1, false);
  // The service scores 32x32; a 48x48 image is rejected, naming the sizes.
  try {
    remote.score({s.prompts[0]}, {task::Image::blank(48, 48)});
    ADD_FAILURE() << "a 48x48 image was scored";
  } catch (const RemoteRewardError& e) {
    EXPECT_NE(std::string(e.what()).find("48x48x3"), std::string::npos) << e.what();
    EXPECT_FALSE(e.request_id().empty());
  }
  EXPECT_THROW(remote.score(s.prompts, {s.images[0]}), std::invalid_argument);
  task::Image broken = s.images[0];
  broken.rgb.pop_back();
  EXPECT_THROW(remote.score({s.prompts[0]}, {broken}), std::invalid_argument);
  // Still serving.
  EXPECT_EQ(remote.score(s.prompts, s.images).size(), 2u);
}

TEST(RemoteReward, OversizedRequestsAreRefusedByTheRpcLayer) {
  RewardServiceOptions options;
  options.max_request_bytes = 4096;  // one 32x32 RGB float image is 12 KiB
  ServingReward server(options);
  RemoteReward remote = server.client();
  const Sample s = samples(1, 1, false);
  try {
    remote.score(s.prompts, s.images);
    ADD_FAILURE() << "an oversized request was scored";
  } catch (const rpc::RpcRemoteError& e) {
    EXPECT_EQ(e.status(), rpc::RpcStatus::kTooLarge) << e.what();
  }
  EXPECT_EQ(server.service().rpc_counters().malformed, 1u);
}

TEST(RemoteReward, TimesOutWhenNoServiceAnswers) {
  std::string endpoint;
  {
    ServingReward gone;
    endpoint = gone.endpoint();
  }
  RemoteRewardOptions o;
  o.endpoint = endpoint;
  o.rpc.timeout = 100ms;
  o.rpc.retries = 1;
  RemoteReward remote(o);
  const Sample s = samples(1, 1, false);
  EXPECT_THROW(remote.score(s.prompts, s.images), rpc::RpcTimeout);
  EXPECT_EQ(remote.counters().attempts, 2u);
}

TEST(RewardService, MalformedRequestsGetErrorRepliesAndTheServiceKeepsServing) {
  ServingReward server;
  const std::string& ep = server.endpoint();
  const Sample s = samples(2, 11, false);

  struct Case {
    std::string what;
    std::string payload;
    std::string kind;        // errors_total label
    std::string in_message;  // expected in the error text
  };
  wire::RewardRequest inconsistent = request_for(s, "inconsistent");
  inconsistent.images.resize(inconsistent.images.size() - 5);  // not count*w*h*c values
  wire::RewardRequest small = request_for(s, "small");
  small.width = small.height = 16;
  small.images.resize(static_cast<std::size_t>(2 * 16 * 16 * 3));
  wire::RewardRequest unknown = request_for(s, "unknown-prompt");
  unknown.prompts[1] = "a purple hexagon";
  wire::Heartbeat heartbeat;
  heartbeat.explorer_id = "x";
  const std::vector<Case> cases = {
      {"garbage bytes", std::string("\xc1\x00garbage", 9), "not_msgpack", "msgpack"},
      {"wrong message type", heartbeat.encode(), "unexpected_type", "heartbeat"},
      {"inconsistent image data", inconsistent.encode(), "bad_value", "images"},
      {"image size", small.encode(), "bad_image", "16x16x3"},
      {"unknown prompt", unknown.encode(), "bad_prompt", "a purple hexagon"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    wire::RewardReply reply;
    ASSERT_NO_THROW(reply = raw_call(ep, c.payload));
    EXPECT_FALSE(reply.ok());
    EXPECT_TRUE(reply.rewards.empty());
    EXPECT_NE(reply.error.find(c.in_message), std::string::npos) << reply.error;
    EXPECT_EQ(server.counter("spotlight_reward_errors_total", {{"kind", c.kind}}), 1.0);
  }
  EXPECT_EQ(raw_call(ep, small.encode()).request_id, "small");
  EXPECT_EQ(server.counter("spotlight_reward_malformed_total"), 6.0);
  EXPECT_EQ(server.counter("spotlight_reward_images_scored_total"), 0.0);

  // Still serving, and well-formed requests are unaffected.
  const wire::RewardReply ok = raw_call(ep, request_for(s, "fine").encode());
  EXPECT_TRUE(ok.ok()) << ok.error;
  EXPECT_EQ(ok.request_id, "fine");
  EXPECT_EQ(ok.rewards, (std::vector<double>{1.0, 1.0}));
  EXPECT_EQ(ok.correct, (std::vector<bool>{true, true}));
}

TEST(RewardService, AMalformedRequestDoesNotSpoilItsBatch) {
  RewardService service(make_task_reward(kTask), RewardServiceOptions{});
  const Sample a = samples(3, 20, false);
  const Sample b = samples(2, 30, true);
  std::vector<rpc::RpcRequest> batch(3);
  batch[0].payload = request_for(a, "a").encode();
  batch[1].payload = "not a message";
  batch[2].payload = request_for(b, "b").encode();
  const auto replies = service.handle(std::move(batch));
  ASSERT_EQ(replies.size(), 3u);
  for (const auto& r : replies)
    EXPECT_TRUE(r.ok);  // failures travel in the RewardReply
  const auto ra = wire::RewardReply::decode(replies[0].body);
  const auto rb = wire::RewardReply::decode(replies[2].body);
  EXPECT_FALSE(wire::RewardReply::decode(replies[1].body).ok());
  EXPECT_EQ(ra.request_id, "a");
  EXPECT_EQ(ra.rewards, (std::vector<double>{1.0, 1.0, 1.0}));
  EXPECT_EQ(rb.request_id, "b");
  ASSERT_EQ(rb.rewards.size(), 2u);
  EXPECT_EQ(rb.rewards[0], local_scores(b)[0].reward);
  EXPECT_EQ(rb.correct, (std::vector<bool>{false, false}));
}

TEST(RewardService, ScoresWithTheConfiguredWeights) {
  RewardService service(make_reward_function({"task", "task"}, {0.5, 0.25}, kTask),
                        RewardServiceOptions{});
  const Sample s = samples(4, 40, false);
  std::vector<rpc::RpcRequest> batch(1);
  batch[0].payload = request_for(s, "w").encode();
  const auto reply = wire::RewardReply::decode(service.handle(std::move(batch))[0].body);
  EXPECT_EQ(reply.rewards, (std::vector<double>{0.75, 0.75, 0.75, 0.75}));
  // The weighted sum's range is declared with the scores: [0, 0.5 + 0.25].
  EXPECT_EQ(reply.range, (std::vector<double>{0.0, 0.75}));
}

// Every score reply declares the reward function's range; the client reports the latest one (or
// reward.range before any, and for a service that declares none) and checks nothing itself.
TEST(RemoteReward, ReportsTheRangeTheServiceDeclares) {
  ServingReward server(RewardServiceOptions{},
                       make_reward_function({"task", "task"}, {2.0, -1.0}, kTask));
  RemoteRewardOptions o;
  o.endpoint = server.endpoint();
  o.range = RewardRange{-10.0, 10.0};
  RemoteReward remote(o);
  EXPECT_EQ(remote.range(), (RewardRange{-10.0, 10.0}));
  const Sample s = samples(3, 7, false);
  const auto scores = remote.score(s.prompts, s.images);
  EXPECT_EQ(remote.range(), (RewardRange{-1.0, 2.0}));
  for (const auto& x : scores)
    EXPECT_FALSE(reward_fault(x.reward, remote.range()).has_value()) << x.reward;
}

TEST(RewardRange, FaultsAreNonFiniteOrOutsideTheRangeAndCheckedRewardsThrowThem) {
  const RewardRange unit = kUnitRewardRange;
  EXPECT_FALSE(reward_fault(0.0, unit).has_value());
  EXPECT_FALSE(reward_fault(1.0, unit).has_value());
  EXPECT_EQ(reward_fault(1e30, unit)->reason, "out_of_range");
  EXPECT_EQ(reward_fault(-5.0, unit)->reason, "out_of_range");
  EXPECT_EQ(reward_fault(std::nan(""), unit)->reason, "non_finite");
  EXPECT_EQ(reward_fault(-INFINITY, unit)->reason, "non_finite");
  EXPECT_EQ(reward_fault(1e30, unit)->message, "reward 1e+30 is outside the declared range [0, 1]");

  // A function that answers nonsense: the checked wrapper refuses the batch, naming the function.
  class Nonsense final : public RewardFunction {
   public:
    std::vector<Scored> score(const std::vector<task::Prompt>& prompts,
                              const std::vector<task::Image>&) override {
      return std::vector<Scored>(prompts.size(), Scored{1e30, true, {}});
    }
    std::string name() const override { return "nonsense"; }
  };
  auto checked = make_checked_reward(std::make_unique<Nonsense>());
  const Sample s = samples(2, 3, false);
  try {
    checked->score(s.prompts, s.images);
    FAIL() << "a reward of 1e30 was accepted";
  } catch (const RewardFaultError& e) {
    EXPECT_EQ(e.reason(), "out_of_range");
    EXPECT_NE(std::string(e.what()).find("nonsense"), std::string::npos) << e.what();
  }
  // The embedded reward stays within its range.
  auto task = make_checked_reward(make_task_reward(kTask));
  EXPECT_EQ(task->score(s.prompts, s.images).size(), 2u);
}

// A reward function that always fails: every request of the batch gets the error.
class FailingReward final : public RewardFunction {
 public:
  std::vector<Scored> score(const std::vector<task::Prompt>&,
                            const std::vector<task::Image>&) override {
    throw std::runtime_error("model exploded");
  }
  std::string name() const override { return "failing"; }
};

TEST(RewardService, AFailingRewardFunctionAnswersEveryRequestWithTheError) {
  auto registry = std::make_shared<metrics::Registry>("reward");
  RewardService service(std::make_unique<FailingReward>(), RewardServiceOptions{}, registry);
  const Sample s = samples(1, 1, false);
  std::vector<rpc::RpcRequest> batch(2);
  batch[0].payload = request_for(s, "x").encode();
  batch[1].payload = request_for(s, "y").encode();
  const auto replies = service.handle(std::move(batch));
  for (const auto& r : replies) {
    const auto reply = wire::RewardReply::decode(r.body);
    EXPECT_NE(reply.error.find("model exploded"), std::string::npos) << reply.error;
  }
  EXPECT_EQ(
      registry->counter("spotlight_reward_errors_total", "", {{"kind", "score_failed"}}).value(),
      2.0);
}

TEST(RewardService, ConcurrentClientsAreBatchedAndGetTheirOwnReplies) {
  RewardServiceOptions options;
  options.max_batch = 64;
  options.batch_window = 200ms;  // long enough that simultaneous requests share a batch
  ServingReward server(options);
  constexpr int kClients = 12;
  constexpr int kRounds = 3;
  std::latch start(kClients);
  std::vector<int> mismatches(kClients, 0);
  std::vector<std::string> failures(kClients);
  {
    std::vector<std::jthread> clients;
    for (int c = 0; c < kClients; ++c) {
      clients.emplace_back([&, c] {
        try {
          RemoteReward remote = server.client(10s);
          start.arrive_and_wait();
          for (int round = 0; round < kRounds; ++round) {
            // Each client and round sends its own mix: 1..4 images, some blank.
            Sample s = samples(1 + (c + round) % 4, 1000 * c + 10 * round, false);
            for (std::size_t i = 0; i < s.images.size(); ++i) {
              if ((c + i) % 2 == 1) s.images[i] = task::Image::blank(32, 32);
            }
            const auto got = remote.score(s.prompts, s.images);
            const auto want = local_scores(s);
            if (got.size() != want.size()) {
              ++mismatches[c];
              continue;
            }
            for (std::size_t i = 0; i < got.size(); ++i) {
              if (got[i].reward != want[i].reward || got[i].correct != want[i].correct) {
                ++mismatches[c];
              }
            }
          }
        } catch (const std::exception& e) {
          failures[c] = e.what();
        }
      });
    }
  }
  for (int c = 0; c < kClients; ++c) {
    EXPECT_EQ(failures[c], "") << "client " << c;
    EXPECT_EQ(mismatches[c], 0) << "client " << c;
  }
  const double requests = server.counter("spotlight_reward_requests_total");
  const double batches = server.counter("spotlight_reward_batches_total");
  EXPECT_EQ(requests, kClients * kRounds);
  EXPECT_LT(batches, requests);
  EXPECT_GE(batches, kRounds);  // a client's next round waits for its previous reply
}

TEST(RewardService, MetricsEndpointServesTheCounters) {
  ServingReward server;
  auto http = metrics::MetricsServer::start(server.registry(), {"127.0.0.1:0"});
  ASSERT_NE(http, nullptr);
  RemoteReward remote = server.client();
  const Sample s = samples(3, 5, false);
  remote.score(s.prompts, s.images);
  raw_call(server.endpoint(), "junk");

  const auto response = testing::http_get("127.0.0.1", http->port(), "/metrics");
  ASSERT_EQ(response.status, 200);
  const std::string& text = response.body;
  // The junk request is answered when it is read: only the good one makes a batch.
  for (const std::string expected : {
           "spotlight_reward_requests_total 2",
           "spotlight_reward_batches_total 1",
           "spotlight_reward_images_scored_total 3",
           "spotlight_reward_malformed_total 1",
           "spotlight_reward_errors_total{kind=\"not_msgpack\"} 1",
           "spotlight_reward_errors_total{kind=\"bad_prompt\"} 0",
           "spotlight_reward_reward_mean 1",
           "spotlight_reward_batch_size_requests_count 1",
           "spotlight_reward_score_seconds_count 1",
       }) {
    EXPECT_NE(text.find(expected), std::string::npos) << "missing '" << expected << "' in\n"
                                                      << text;
  }
}

// Issue #13 (4): NaN or Inf pixels used to score 0 with no error and no counter.
TEST(RewardService, NonFinitePixelsAreRejectedAndCounted) {
  ServingReward server;
  const Sample s = samples(3, 50, false);
  wire::RewardRequest nan = request_for(s, "nan");
  const std::size_t per_image = 32 * 32 * 3;
  nan.images[per_image + (2 * 32 + 3) * 3 + 1] = std::numeric_limits<float>::quiet_NaN();
  wire::RewardRequest inf = request_for(s, "inf");
  inf.images[5] = -std::numeric_limits<float>::infinity();
  const auto a = raw_call(server.endpoint(), nan.encode());
  EXPECT_EQ(a.request_id, "nan");
  EXPECT_TRUE(a.rewards.empty());
  EXPECT_NE(a.error.find("images[1] has NaN at x=3 y=2 channel 1"), std::string::npos) << a.error;
  const auto b = raw_call(server.endpoint(), inf.encode());
  EXPECT_NE(b.error.find("images[0] has Inf"), std::string::npos) << b.error;
  EXPECT_EQ(server.counter("spotlight_reward_errors_total", {{"kind", "non_finite"}}), 2.0);
  EXPECT_EQ(server.counter("spotlight_reward_malformed_total"), 2.0);
  EXPECT_EQ(server.counter("spotlight_reward_images_scored_total"), 0.0);
  EXPECT_TRUE(raw_call(server.endpoint(), request_for(s, "fine").encode()).ok());
}

// A reward function that holds every call until released (the scorer stays busy meanwhile).
class GatedReward final : public RewardFunction {
 public:
  std::vector<Scored> score(const std::vector<task::Prompt>& prompts,
                            const std::vector<task::Image>& images) override {
    if (!entered_flag_.exchange(true)) entered_.set_value();
    release_.wait();
    return inner_->score(prompts, images);
  }
  std::string name() const override { return "gated"; }
  std::future<void> entered() { return entered_.get_future(); }
  void release() { release_promise_.set_value(); }

 private:
  std::unique_ptr<RewardFunction> inner_ = make_task_reward(kTask);
  std::atomic<bool> entered_flag_{false};
  std::promise<void> entered_;
  std::promise<void> release_promise_;
  std::shared_future<void> release_ = release_promise_.get_future().share();
};

// Issue #13 (4): heavy requests used to be buffered without bound. Requests held (received, not
// yet answered) now stay within max_queued_bytes: beyond it the service answers "busy" at once,
// without waiting for the scorer.
TEST(RewardService, RequestsBeyondTheMemoryBudgetAreAnsweredBusyAtOnce) {
  const Sample s = samples(4, 60, false);
  const std::string payload = request_for(s, "r").encode();
  RewardServiceOptions options;
  options.max_request_bytes = payload.size() + 1024;
  options.max_client_queued_bytes = 5 * payload.size() / 2;  // two requests, not three
  options.max_queued_bytes = options.max_client_queued_bytes;
  auto gated = std::make_unique<GatedReward>();
  GatedReward& gate = *gated;
  auto entered = gate.entered();
  ServingReward server(options, std::move(gated));
  auto first = std::async(std::launch::async, [&] { return raw_call(server.endpoint(), payload); });
  ASSERT_EQ(entered.wait_for(10s), std::future_status::ready);  // held by the busy scorer
  auto second =
      std::async(std::launch::async, [&] { return raw_call(server.endpoint(), payload); });
  ASSERT_TRUE(testing::wait_for(
      [&] {
        return server.registry().gauge("spotlight_reward_queued_requests", "").value() == 2.0;
      },
      10s));
  const auto third = raw_call(server.endpoint(), payload);  // answered while the scorer waits
  EXPECT_FALSE(third.ok());
  EXPECT_NE(third.error.find("busy"), std::string::npos) << third.error;
  EXPECT_EQ(server.counter("spotlight_reward_rejected_messages_total", {{"reason", "over_budget"}}),
            1.0);
  gate.release();
  EXPECT_TRUE(first.get().ok());
  EXPECT_TRUE(second.get().ok());
  EXPECT_TRUE(testing::wait_for(
      [&] { return server.registry().gauge("spotlight_reward_queued_bytes", "").value() == 0.0; },
      10s));
  EXPECT_THROW(RewardService(make_task_reward(kTask),
                             [] {
                               RewardServiceOptions o;
                               o.max_client_queued_bytes = o.max_request_bytes - 1;
                               return o;
                             }()),
               std::invalid_argument);
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size(), std::max<std::size_t>(rank, 1)) - 1];
}

// Issue #13 (4), its acceptance criterion: four clients looping heavy requests used to cut a
// normal client from 2521 to 12 requests in 20 s. Now a good client's p99 latency beside four
// heavy clients (processes of their own, 1000 images a request) stays within twice its p99 when
// the service is idle.
// Measured in one run, in ten alternating phases of 100 requests (short, so that both conditions
// see the same background load of a shared machine): the heavy clients run (beside) or are paused
// with SIGSTOP (alone: the measurement waits until their last requests are answered, so the service
// is idle). Real clients run on machines of their own; here they share the test's 2 cores, so
// they run at nice 19, which gives the cores to the service and the good client whenever those
// want them, as separate machines would. The service gets no special treatment: it runs in the
// test's process, at the test's priority, with its default options.
TEST(RewardService, AGoodClientsP99BesideFourHeavyClientsIsWithinTwiceItsP99Alone) {
  ServingReward service;  // the defaults
  const Sample good = samples(4, 70, false);
  const auto heavy_client = testing::binary_path("tests/services/reward/reward_heavy_client");
  const auto logs = testing::make_temp_dir("reward-fairness");
  const auto queued = [&] {
    return service.registry().gauge("spotlight_reward_queued_requests", "").value();
  };
  std::vector<testing::Process> heavy;
  for (int c = 0; c < 4; ++c) {
    heavy.emplace_back(heavy_client, std::vector<std::string>{service.endpoint(), "1000", "19"},
                       logs / ("heavy-" + std::to_string(c)));
  }
  const auto set_running = [&](bool running) {
    for (auto& c : heavy)
      c.signal(running ? SIGCONT : SIGSTOP);
  };
  RemoteReward client = service.client(30s);
  std::vector<double> alone, beside;
  double heavy_images = 0;
  for (int phase = 0; phase < 10; ++phase) {
    const bool sharing = phase % 2 == 1;
    set_running(sharing);
    if (sharing) {
      ASSERT_TRUE(testing::wait_for([&] { return queued() >= 4; }, 120s));
    } else {
      ASSERT_TRUE(testing::wait_for([&] { return queued() == 0; }, 120s));
    }
    const double scored = service.counter("spotlight_reward_images_scored_total");
    for (int i = 0; i < 100; ++i) {
      const auto start = std::chrono::steady_clock::now();
      client.score(good.prompts, good.images);
      (sharing ? beside : alone)
          .push_back(
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    if (sharing) heavy_images += service.counter("spotlight_reward_images_scored_total") - scored;
  }
  for (auto& c : heavy) {
    c.signal(SIGCONT);
    c.signal(SIGTERM);
  }
  for (auto& c : heavy)
    EXPECT_TRUE(c.wait(120s).has_value()) << c.log_tail();
  std::filesystem::remove_all(logs);
  const double p50_alone = percentile(alone, 0.5), p99_alone = percentile(alone, 0.99);
  const double p50_beside = percentile(beside, 0.5), p99_beside = percentile(beside, 0.99);
  std::cout << "good client alone: p50 " << p50_alone * 1e3 << " ms, p99 " << p99_alone * 1e3
            << " ms; beside 4 heavy clients: p50 " << p50_beside * 1e3 << " ms, p99 "
            << p99_beside * 1e3 << " ms (" << alone.size() << " + " << beside.size()
            << " requests); heavy images scored beside it: " << heavy_images << "\n";
  EXPECT_LE(p99_beside, 2 * p99_alone);
  // The heavy clients were served beside it, not starved in turn: more images than the good
  // client's.
  EXPECT_GT(heavy_images, static_cast<double>(beside.size() * good.images.size()));
}

TEST(RewardConfig, DefaultsAndTranslation) {
  const auto defaults = config::Config::load(reward_schema());
  EXPECT_EQ(defaults.get_string("reward.bind"), "tcp://127.0.0.1:5557");
  EXPECT_EQ(defaults.get_string_list("reward.functions"), std::vector<std::string>{"task"});
  EXPECT_EQ(defaults.get_string("metrics.bind"), metrics::kDefaultMetricsBind);
  EXPECT_EQ(task::task_options(defaults).image_size, 32);
  EXPECT_EQ(make_reward_function(defaults)->name(), "weighted(task)");

  config::ConfigSources sources;
  sources.overrides = {"reward.batch_window_ms=7", "reward.max_batch=9", "task.image_size=64",
                       "reward.max_request_bytes=4096"};
  const auto o = reward_service_options(config::Config::load(reward_schema(), sources));
  EXPECT_EQ(o.batch_window, std::chrono::microseconds(7000));
  EXPECT_EQ(o.max_batch, 9u);
  EXPECT_EQ(o.task.image_size, 64);
  EXPECT_EQ(o.max_request_bytes, 4096u);
  EXPECT_FALSE(o.curve.enabled());  // plain text unless a key file is configured
  EXPECT_EQ(o.handshake_timeout, zmqio::kDefaultHandshakeTimeout);
  EXPECT_TRUE(o.limit_message_bytes);  // a message is cut off past its limit unless turned off
  sources.overrides.push_back("reward.limit_message_bytes=false");
  EXPECT_FALSE(
      reward_service_options(config::Config::load(reward_schema(), sources)).limit_message_bytes);
}

TEST(RewardConfig, RewardKindStrictPaysOnlyTheVerdict) {
  // Three of four asked squares: partial credit 0.75, strict 0 (the launcher passes the run's
  // reward.kind, so explorers scored by the service see the trainer's reward).
  task::Prompt drawn;
  drawn.category = task::Category::kCounting;
  drawn.objects = {task::ObjectSpec{3, task::Colour::kCyan, task::Shape::kSquare}};
  task::Prompt asked = drawn;
  asked.objects[0].count = 4;
  const task::Image image = task::render(drawn, 3, task::TaskOptions{});
  EXPECT_EQ(task::task_options(config::Config::load(reward_schema())).reward_kind,
            task::RewardKind::kPartial);
  for (const auto& [kind, want] : {std::pair{"partial", 0.75}, std::pair{"strict", 0.0}}) {
    config::ConfigSources sources;
    sources.overrides = {std::string("reward.kind=") + kind};
    const auto config = config::Config::load(reward_schema(), sources);
    const auto scored = make_reward_function(config)->score({asked, drawn}, {image, image});
    EXPECT_DOUBLE_EQ(scored[0].reward, want) << kind;
    EXPECT_EQ(scored[1].reward, 1.0) << kind;
  }
  config::ConfigSources bad;
  bad.overrides = {"reward.kind=binary"};
  EXPECT_THROW(config::Config::load(reward_schema(), bad), config::ConfigError);
}

TEST(RewardConfig, UnknownFunctionsAndMismatchedWeightsAreRejected) {
  config::ConfigSources unknown;
  unknown.overrides = {"reward.functions=[task, clip]", "reward.weights=[1, 1]"};
  try {
    config::Config::load(reward_schema(), unknown);
    ADD_FAILURE() << "accepted reward function 'clip'";
  } catch (const config::ConfigError& e) {
    EXPECT_EQ(e.key(), "reward.functions");
    EXPECT_NE(std::string(e.what()).find("clip"), std::string::npos) << e.what();
  }
  config::ConfigSources mismatch;
  mismatch.overrides = {"reward.weights=[1, 2]"};
  const auto cfg = config::Config::load(reward_schema(), mismatch);
  try {
    make_reward_function(cfg);
    ADD_FAILURE() << "accepted 2 weights for 1 function";
  } catch (const config::ConfigError& e) {
    EXPECT_EQ(e.key(), "reward.weights");
  }
  EXPECT_THROW(make_reward_function({"clip"}, {1.0}, kTask), std::invalid_argument);
  EXPECT_THROW(make_reward_function({}, {}, kTask), std::invalid_argument);
}

TEST(RemoteRewardConfig, ClientKeys) {
  config::ConfigSources sources;
  sources.overrides = {"reward.endpoint=tcp://reward:5557", "reward.timeout_ms=1234",
                       "reward.retries=0", "reward.max_images_per_request=16"};
  const auto o = remote_reward_options(config::Config::load(remote_reward_schema(), sources));
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->endpoint, "tcp://reward:5557");
  EXPECT_EQ(o->rpc.timeout, 1234ms);
  EXPECT_EQ(o->rpc.retries, 0);
  EXPECT_EQ(o->max_images_per_request, 16u);
  EXPECT_FALSE(o->rpc.curve.enabled());
  // No endpoint: no client (the caller scores in-process). The defaults: 10 s per attempt and two
  // retries after the first, the same in every schema that has the fragment (the run's).
  const auto defaults = config::Config::load(remote_reward_schema(), {});
  EXPECT_FALSE(remote_reward_options(defaults).has_value());
  EXPECT_EQ(defaults.get_int("reward.timeout_ms"), 10000);
  EXPECT_EQ(defaults.get_int("reward.retries"), 2);
  const auto run = config::Config::load(run::run_schema(), {});
  EXPECT_EQ(run.get_int("reward.retries"), defaults.get_int("reward.retries"));
  EXPECT_EQ(run.get_int("reward.timeout_ms"), defaults.get_int("reward.timeout_ms"));
  // reward.range: [0, 1] unless set; an empty or reversed interval is refused.
  EXPECT_EQ(o->range, kUnitRewardRange);
  sources.overrides.push_back("reward.range=[-1, 5]");
  EXPECT_EQ(remote_reward_options(config::Config::load(remote_reward_schema(), sources))->range,
            (RewardRange{-1.0, 5.0}));
  for (const char* bad : {"reward.range=[1, 1]", "reward.range=[2, 1]", "reward.range=[0]"}) {
    config::ConfigSources s;
    s.overrides = {bad};
    EXPECT_THROW(config::Config::load(remote_reward_schema(), s), config::ConfigError) << bad;
  }
}

}  // namespace
}  // namespace spotlight::reward
