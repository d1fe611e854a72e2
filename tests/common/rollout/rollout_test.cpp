// Kept trajectories: what an explorer writes is what the trainer gets back, bit for bit, and a
// trajectory that does not match its claims is rejected with the reason, never returned.
#include <cmath>
#include <limits>
#include <map>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/rollout/trajectory.hpp"
#include "tests/common/sampler/sampler_fixtures.hpp"

namespace spotlight::rollout {
namespace {

using sampler::test::perturbed_model;
using sampler::test::tokens;

constexpr int kSteps = 5;

struct Sampled {
  sampler::SamplerOptions options;
  sampler::Trajectory trajectory;
};

Sampled sample_two() {
  auto model = perturbed_model(3);
  Sampled s;
  s.options.steps = kSteps;
  s.options.keep_trajectory = true;
  s.trajectory = sampler::sample(model, tokens(2), {101, 102}, s.options);
  return s;
}

TrajectoryOrigin origin_of(std::uint64_t seed) {
  TrajectoryOrigin o;
  o.task_id = "i4/p1/c2";
  o.run_id = "run";
  o.iteration = 4;
  o.prompt_index = 1;
  o.seed = seed;
  o.weights_version = 3;
  o.weights_checksum = "00000000000000a3";
  o.explorer_id = "e1";
  return o;
}

TrajectoryExpectation expectation(const Sampled& s, StepWindow window) {
  TrajectoryExpectation e;
  e.task_id = "i4/p1/c2";
  e.run_id = "run";
  e.iteration = 4;
  e.prompt_index = 1;
  e.seed = 101;
  e.weights_version = 3;
  e.newest_version = 4;
  e.sampler = s.options;
  e.window = window;
  e.latent_shape = {3, 32, 32};
  return e;
}

WeightsChecksum published() {
  return [](std::int64_t v) -> std::optional<std::string> {
    static const std::map<std::int64_t, std::string> known{{3, "00000000000000a3"},
                                                           {4, "00000000000000a4"}};
    const auto it = known.find(v);
    if (it == known.end()) return std::nullopt;
    return it->second;
  };
}

Rejection rejection_of(const std::string& bytes, const TrajectoryExpectation& e) {
  try {
    accept_trajectory(bytes, e, published(), torch::TensorOptions());
  } catch (const TrajectoryRejected& r) {
    EXPECT_NE(std::string(r.what()).find(e.task_id), std::string::npos) << r.what();
    return r.reason();
  }
  ADD_FAILURE() << "accepted";
  return Rejection::kUndecodable;
}

TEST(TrainedSteps, CountFromTheEndAndClamp) {
  EXPECT_EQ(trained_steps(10, 0, -1), (StepWindow{0, 9}));
  EXPECT_EQ(trained_steps(10, 2, 0), (StepWindow{2, 10}));
  EXPECT_EQ(trained_steps(10, 3, 6), (StepWindow{3, 6}));
  EXPECT_EQ(trained_steps(4, 7, -1), (StepWindow{4, 4}));
}

TEST(Split, EachRolloutIsItsSampleCutToTheWindow) {
  const auto s = sample_two();
  const StepWindow window{1, 4};
  const auto rollouts = split(s.trajectory, window, 7);
  ASSERT_EQ(rollouts.size(), 2u);
  for (int64_t b = 0; b < 2; ++b) {
    EXPECT_TRUE(torch::equal(rollouts[b].latents, s.trajectory.latents[b].slice(0, 1, 5)));
    EXPECT_TRUE(torch::equal(rollouts[b].log_probs, s.trajectory.log_probs[b].slice(0, 1, 4)));
    EXPECT_EQ(rollouts[b].weights_version, 7);
    EXPECT_EQ(rollouts[b].window, window);
  }
  sampler::Trajectory final_only{s.trajectory.latents.slice(1, kSteps, kSteps + 1),
                                 s.trajectory.log_probs};
  EXPECT_THROW(split(final_only, window, 7), std::invalid_argument);
}

TEST(Trajectory, RoundTripsBitForBitThroughTheWire) {
  const auto s = sample_two();
  const StepWindow window{0, kSteps - 1};
  const auto message = make_trajectory(origin_of(101), s.options, s.trajectory.latents[0],
                                       s.trajectory.log_probs[0], window);
  EXPECT_EQ(message.latent_shape, (std::vector<std::int64_t>{3, 32, 32}));
  EXPECT_EQ(message.checksum, trajectory_checksum(message.latents, message.log_probs));
  const Rollout r = accept_trajectory(message.encode(), expectation(s, window), published(),
                                      torch::TensorOptions());
  EXPECT_TRUE(torch::equal(r.latents, s.trajectory.latents[0].slice(0, 0, kSteps)));
  EXPECT_TRUE(torch::equal(r.log_probs, s.trajectory.log_probs[0].slice(0, 0, kSteps - 1)));
  EXPECT_EQ(r.weights_version, 3);
  EXPECT_EQ(r.window, window);
}

TEST(Trajectory, EveryFailedClaimIsRejectedWithItsReason) {
  const auto s = sample_two();
  const StepWindow window{0, kSteps - 1};
  const auto good = make_trajectory(origin_of(101), s.options, s.trajectory.latents[0],
                                    s.trajectory.log_probs[0], window);
  const auto expected = expectation(s, window);
  ASSERT_NO_THROW(accept_trajectory(good.encode(), expected, published(), {}));

  EXPECT_EQ(rejection_of("not msgpack", expected), Rejection::kUndecodable);

  auto tampered = good;  // a flipped latent, the old checksum
  tampered.latents[17] += 1.0f;
  EXPECT_EQ(rejection_of(tampered.encode(), expected), Rejection::kChecksum);
  tampered = good;
  tampered.log_probs[1] = -tampered.log_probs[1];
  EXPECT_EQ(rejection_of(tampered.encode(), expected), Rejection::kChecksum);

  auto other = good;  // claims v4 while its result says v3
  other.weights_version = 4;
  other.weights_checksum = "00000000000000a4";
  EXPECT_EQ(rejection_of(other.encode(), expected), Rejection::kWeightsVersion);
  auto newer = expected;  // v3 was never published as far as this trainer knows
  newer.newest_version = 2;
  EXPECT_EQ(rejection_of(good.encode(), newer), Rejection::kWeightsVersion);

  other = good;  // the checksum of other weights
  other.weights_checksum = "00000000000000a4";
  EXPECT_EQ(rejection_of(other.encode(), expected), Rejection::kWeightsChecksum);
  other = good;  // a version nobody published
  other.weights_version = 2;
  auto claims_two = expected;
  claims_two.weights_version = 2;
  EXPECT_EQ(rejection_of(other.encode(), claims_two), Rejection::kWeightsChecksum);

  const auto mismatch = [&](auto&& change) {
    auto e = expected;
    change(e);
    return rejection_of(good.encode(), e);
  };
  EXPECT_EQ(mismatch([](auto& e) { e.seed = 102; }), Rejection::kMismatch);
  EXPECT_EQ(mismatch([](auto& e) { e.task_id = "i4/p1/c3"; }), Rejection::kMismatch);
  EXPECT_EQ(mismatch([](auto& e) { e.run_id = "other"; }), Rejection::kMismatch);
  EXPECT_EQ(mismatch([](auto& e) { e.sampler.steps = 6; }), Rejection::kMismatch);
  EXPECT_EQ(mismatch([](auto& e) { e.sampler.noise_level = 0.5; }), Rejection::kMismatch);
  EXPECT_EQ(mismatch([](auto& e) { e.window = StepWindow{1, kSteps - 1}; }), Rejection::kMismatch);
  EXPECT_EQ(mismatch([](auto& e) { e.latent_shape = {4, 32, 32}; }), Rejection::kMismatch);

  auto not_finite = good;  // consistent checksum, impossible value
  not_finite.latents[0] = std::numeric_limits<float>::quiet_NaN();
  not_finite.checksum = trajectory_checksum(not_finite.latents, not_finite.log_probs);
  EXPECT_EQ(rejection_of(not_finite.encode(), expected), Rejection::kMismatch);
}

}  // namespace
}  // namespace spotlight::rollout
