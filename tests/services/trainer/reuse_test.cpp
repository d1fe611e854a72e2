// Reusing explored work (issue #14): a rollout exploration already sampled is not sampled again.
//  - sync: an explored candidate is the rollout (same seed, weights, steps and Philox noise), so
//    training on it gives exactly the weights of sampling it again, with no rollout sampling;
//  - sync-stale: exploration uses the weights of the previous iteration;
//  - off-policy: a trajectory sampled with v_k (staleness 0) trains exactly as on-policy; one
//    sampled with v_{k-1} trains with the importance ratio pi_k / pi_{k-1}, clipped.
#include <cmath>
#include <map>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/rl/advantages.hpp"
#include "common/rollout/trajectory.hpp"
#include "common/run/schedule.hpp"
#include "common/sampler/flow_step.hpp"
#include "common/task/generator.hpp"
#include "tests/services/trainer/trainer_fixtures.hpp"

namespace spotlight::trainer {
namespace {

using testing::exploration_options;
using testing::Fixture;
using testing::micro;
using testing::perturb;
using testing::RedReward;
using testing::small_options;

TEST(Reuse, SyncTrainsExactlyAsResamplingButRunsNoRolloutSampler) {
  auto o = small_options("sync");
  o.audit_every = 0;
  Fixture reuse(o, nullptr, run::Reuse::kOnPolicy);
  Fixture resample(o, nullptr, run::Reuse::kOff);
  const int rollouts = o.prompts_per_iteration * o.group_size;
  for (int64_t k = 0; k < 2; ++k) {
    const auto a = reuse.trainer->run_iteration(k);
    const auto b = resample.trainer->run_iteration(k);
    EXPECT_EQ(a.rollouts_reused, rollouts);
    EXPECT_EQ(a.rollouts_sampled, 0);
    EXPECT_EQ(a.rollout_sampler_steps, 0);
    EXPECT_EQ(b.rollouts_reused, 0);
    EXPECT_EQ(b.rollouts_sampled, rollouts);
    EXPECT_EQ(b.rollout_sampler_steps, rollouts * o.sampler.steps);
    EXPECT_EQ(a.explore_sampler_steps, b.explore_sampler_steps);
    // The same rollouts, hence the same rewards, losses, gradients and updates.
    EXPECT_EQ(a.reward_mean, b.reward_mean) << "iteration " << k;
    EXPECT_EQ(a.reward_std, b.reward_std) << "iteration " << k;
    EXPECT_EQ(a.ratio_mean, b.ratio_mean) << "iteration " << k;
    EXPECT_EQ(a.ratio_max_abs_log, b.ratio_max_abs_log) << "iteration " << k;
    EXPECT_EQ(a.clip_fraction, b.clip_fraction) << "iteration " << k;
    EXPECT_EQ(a.first_ratio_max_deviation, 0.0);
    EXPECT_TRUE(reuse.policy.weights_bytes() == resample.policy.weights_bytes())
        << "iteration " << k;
  }
  // Another step count for exploration: candidates are not rollouts, nothing is reused.
  auto fewer = o;
  Fixture other(o);
  auto e = exploration_options(o, run::Reuse::kOnPolicy);
  e.sampler.steps = 3;
  GrpoTrainer trainer(fewer, other.policy, other.reward,
                      make_sync_seed_source(e, other.policy, other.reward));
  EXPECT_EQ(trainer.run_iteration(0).rollouts_reused, 0);
}

TEST(Reuse, SyncStaleExploresWithThePreviousIterationsWeights) {
  const auto o = small_options("sync-stale");
  const auto e = exploration_options(o, run::Reuse::kOnPolicy);
  RedReward reward;
  policy::Policy trained(micro()), v0(micro()), v1(micro());
  perturb(trained, 4);
  v0.copy_weights_from(trained);
  auto stale = make_sync_stale_seed_source(e, trained, reward);
  task::PromptGenerator generator(trained.task_options());
  const auto prompts = [&](int64_t k) {
    return run::iteration_prompts(generator, o.seed, k, o.prompts_per_iteration);
  };
  const auto explored = [&](policy::Policy& weights, int64_t k) {
    return make_sync_seed_source(e, weights, reward)->select(k, prompts(k)).candidate_rewards;
  };
  // Iteration 0 has no previous weights: v_0, which is also the current one (on-policy reuse).
  const auto s0 = stale->select(0, prompts(0));
  EXPECT_EQ(s0.explore_weights_version, 0);
  EXPECT_EQ(s0.candidate_rewards, explored(v0, 0));
  EXPECT_FALSE(s0.rollouts.empty());
  perturb(trained, 5);  // "training": v_1
  v1.copy_weights_from(trained);
  const auto s1 = stale->select(1, prompts(1));
  EXPECT_EQ(s1.explore_weights_version, 0);
  EXPECT_EQ(s1.candidate_rewards, explored(v0, 1));
  EXPECT_NE(s1.candidate_rewards, explored(v1, 1));
  EXPECT_TRUE(s1.rollouts.empty()) << "stale candidates are rollouts only with off_policy reuse";

  // Its state survives a restart: a new source restored from it explores iteration 2 with v_1.
  const auto files = stale->checkpoint_files();
  EXPECT_EQ(files.size(), 2u);
  perturb(trained, 6);  // v_2
  auto restored = make_sync_stale_seed_source(e, trained, reward);
  restored->restore(files);
  const auto s2 = restored->select(2, prompts(2));
  EXPECT_EQ(s2.explore_weights_version, 1);
  EXPECT_EQ(s2.candidate_rewards, explored(v1, 2));
  EXPECT_TRUE(make_sync_seed_source(e, trained, reward)->checkpoint_files().empty());
}

// Hands the trainer the rollouts of candidates 0..G-1, sampled by `sampler_policy` (weights
// version `version`) in chunks of 3 (not the trainer's micro-batches), each passed through the
// wire as a kept trajectory and checked as the async trainer checks it.
class TrajectorySource final : public SeedSource {
 public:
  TrajectorySource(GrpoOptions o, policy::Policy& sampler_policy, std::int64_t version)
      : o_(std::move(o)), policy_(sampler_policy), version_(version) {}

  SeedSelection select(int64_t iteration, const std::vector<task::Prompt>& prompts) override {
    SeedSelection out;
    std::vector<task::Prompt> flat_prompts;
    std::vector<uint64_t> flat_seeds;
    for (size_t i = 0; i < prompts.size(); ++i) {
      out.seeds.emplace_back();
      for (int j = 0; j < o_.group_size; ++j) {
        out.seeds[i].push_back(run::candidate_seed(o_.seed, iteration, static_cast<int>(i), j));
        flat_prompts.push_back(prompts[i]);
        flat_seeds.push_back(out.seeds[i].back());
      }
    }
    auto options = o_.sampler;
    options.keep_trajectory = true;
    const auto chunks = policy_.sample(flat_prompts, flat_seeds, options, 3);
    const auto scores = reward_.score(flat_prompts, policy_.final_images(chunks));
    const auto window =
        rollout::trained_steps(o_.sampler.steps, o_.train_step_begin, o_.train_step_end);
    const auto checksum = [](std::int64_t v) -> std::optional<std::string> {
      return "weights-v" + std::to_string(v);
    };
    size_t n = 0;
    out.rollouts.resize(prompts.size());
    for (const auto& chunk : chunks) {
      for (int64_t b = 0; b < chunk.latents.size(0); ++b, ++n) {
        const size_t i = n / static_cast<size_t>(o_.group_size);
        rollout::TrajectoryOrigin origin;
        origin.task_id =
            run::seed_task_id(iteration, static_cast<int>(i), static_cast<int>(n % o_.group_size));
        origin.run_id = "test";
        origin.iteration = iteration;
        origin.prompt_index = static_cast<int64_t>(i);
        origin.seed = flat_seeds[n];
        origin.weights_version = version_;
        origin.weights_checksum = *checksum(version_);
        const auto bytes =
            rollout::make_trajectory(origin, options, chunk.latents[b], chunk.log_probs[b], window)
                .encode();
        rollout::TrajectoryExpectation expected;
        expected.task_id = origin.task_id;
        expected.run_id = "test";
        expected.iteration = iteration;
        expected.prompt_index = origin.prompt_index;
        expected.seed = origin.seed;
        expected.weights_version = version_;
        expected.newest_version = iteration;
        expected.sampler = o_.sampler;
        expected.window = window;
        expected.latent_shape = {3, 32, 32};
        auto r = rollout::accept_trajectory(bytes, expected, checksum, policy_.tensor_options());
        r.reward = scores[n].reward;
        out.rollouts[i].push_back(std::move(r));
      }
    }
    last = out;
    return out;
  }

  SeedSelection last;  // what select() returned last

 private:
  GrpoOptions o_;
  policy::Policy& policy_;
  std::int64_t version_;
  RedReward reward_;
};

TEST(Reuse, OffPolicyAtStalenessZeroTrainsExactlyAsOnPolicy) {
  auto o = small_options("none");
  o.audit_every = 0;
  Fixture on_policy(o);  // random seeds = candidates 0..G-1, sampled by the trainer
  policy::Policy trained(micro()), sampler_policy(micro());
  perturb(trained, 4);
  sampler_policy.copy_weights_from(trained);
  RedReward reward;
  GrpoTrainer off_policy(o, trained, reward,
                         std::make_unique<TrajectorySource>(o, sampler_policy, 0));
  const auto a = on_policy.trainer->run_iteration(0);
  const auto b = off_policy.run_iteration(0);
  const int rollouts = o.prompts_per_iteration * o.group_size;
  EXPECT_EQ(a.rollouts_sampled, rollouts);
  EXPECT_EQ(b.rollouts_reused, rollouts);
  EXPECT_EQ(b.rollouts_off_policy, 0);
  EXPECT_EQ(b.rollout_sampler_steps, 0);
  EXPECT_EQ(b.first_ratio_max_deviation, 0.0) << "pi_k / pi_k must be exactly 1";
  EXPECT_EQ(a.reward_mean, b.reward_mean);
  EXPECT_EQ(a.ratio_mean, b.ratio_mean);
  EXPECT_EQ(a.ratio_max_abs_log, b.ratio_max_abs_log);
  EXPECT_EQ(a.clip_fraction, b.clip_fraction);
  EXPECT_TRUE(on_policy.policy.weights_bytes() == trained.weights_bytes());
}

TEST(Reuse, OffPolicyAtStalenessOneUsesTheClippedImportanceRatio) {
  auto o = small_options("none");
  o.audit_every = 0;
  o.loss.clip_range = 1e-4;          // the run default: staleness moves ratios past it
  o.micro_batches_per_update = 100;  // one update at the end: every ratio is pi_k / pi_{k-1}
  policy::Policy trained(micro()), previous(micro());
  perturb(previous, 4);  // v_{k-1}
  trained.copy_weights_from(previous);
  perturb(trained, 5);  // v_k
  policy::Policy before_update(micro());
  before_update.copy_weights_from(trained);
  RedReward reward;
  auto source = std::make_unique<TrajectorySource>(o, previous, 0);
  TrajectorySource& trajectories = *source;
  GrpoTrainer trainer(o, trained, reward, std::move(source));
  const auto report = trainer.run_iteration(1);
  const int rollouts = o.prompts_per_iteration * o.group_size;
  EXPECT_EQ(report.rollouts_reused, rollouts);
  EXPECT_EQ(report.rollouts_off_policy, rollouts);
  EXPECT_EQ(report.rollout_staleness_max, 1);
  EXPECT_EQ(report.rollout_sampler_steps, 0);
  EXPECT_GT(report.ratio_max_abs_log, 0.0) << "pi_k / pi_{k-1} is not 1";

  // The same statistics computed independently, with v_k, from the rollouts handed over.
  const auto& selection = trajectories.last;
  std::vector<double> rewards;
  for (const auto& group : selection.rollouts) {
    for (const auto& r : group)
      rewards.push_back(r->reward);
  }
  rl::AdvantageOptions advantage_options;
  advantage_options.group_size = o.group_size;
  const auto advantages = rl::group_advantages(rewards, advantage_options);
  task::PromptGenerator generator(trained.task_options());
  const auto prompts = run::iteration_prompts(generator, o.seed, 1, o.prompts_per_iteration);
  const auto grid = sampler::time_grid(o.sampler.steps, o.sampler.shift);
  const auto window = rollout::trained_steps(o.sampler.steps, 0, -1);
  torch::NoGradGuard no_grad;
  double ratio_sum = 0, max_abs_log = 0;
  int trained_terms = 0, clipped = 0;
  size_t n = 0;
  for (size_t i = 0; i < selection.rollouts.size(); ++i) {
    for (const auto& r : selection.rollouts[i]) {
      const double a = advantages[n++];
      if (a == 0.0) continue;
      const auto tokens = before_update.tokens({prompts[i]});
      for (int j = window.begin; j < window.end; ++j) {
        const auto x = r->latents[j - window.begin].unsqueeze(0);
        const auto x_next = r->latents[j - window.begin + 1].unsqueeze(0);
        const auto c =
            sampler::sde_coefficients(grid[j], grid[j + 1], o.sampler.noise_level, grid[1]);
        const auto t = torch::full({1}, grid[j]);
        const auto mean = sampler::sde_mean(x, before_update.model()->forward(x, t, tokens), c);
        const double log_ratio = sampler::sde_log_prob(x_next, mean, c).item<double>() -
                                 r->log_probs[j - window.begin].item<double>();
        const double ratio = std::exp(log_ratio);
        ratio_sum += ratio;
        max_abs_log = std::max(max_abs_log, std::abs(log_ratio));
        // The clipped branch is the larger loss: A > 0 above 1 + eps, A < 0 below 1 - eps.
        if ((a > 0 && ratio > 1 + o.loss.clip_range) || (a < 0 && ratio < 1 - o.loss.clip_range))
          ++clipped;
        ++trained_terms;
      }
    }
  }
  ASSERT_GT(trained_terms, 0);
  // Float32 forward passes of other batch sizes: equal up to rounding.
  EXPECT_NEAR(report.ratio_mean, ratio_sum / trained_terms, 1e-5);
  EXPECT_NEAR(report.ratio_max_abs_log, max_abs_log, 1e-4 + 1e-3 * max_abs_log);
  EXPECT_NEAR(report.clip_fraction, static_cast<double>(clipped) / trained_terms,
              1.5 / trained_terms);
  EXPECT_GT(report.clip_fraction, 0.0) << "staleness 1 should move some ratios past 1e-4";
  EXPECT_LT(report.clip_fraction, 1.0) << "ratios on the other side of 1 are not clipped";
}

}  // namespace
}  // namespace spotlight::trainer
