#include "services/trainer/grpo_trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "common/durable/durable_file.hpp"
#include "common/model/safetensors.hpp"
#include "common/outage/retry.hpp"
#include "common/rl/kendall.hpp"
#include "common/rl/selection.hpp"
#include "common/rollout/rollout.hpp"
#include "common/run/schedule.hpp"
#include "common/sampler/flow_step.hpp"
#include "common/seeds/seeds.hpp"
#include "common/task/generator.hpp"
#include "common/task/score.hpp"
#include "services/trainer/checkpoint_store.hpp"
#include "services/trainer/data_parallel.hpp"
#include "services/trainer/validation_schedule.hpp"

namespace spotlight::trainer {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

// Thrown at a phase boundary once a stop is requested; caught by run().
struct Abandoned {};

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Waits for the work queued on a CUDA device, so a phase's clock reading includes its kernels.
void finish_device_work(const at::TensorOptions& options) {
  if (options.device().is_cuda()) torch::cuda::synchronize(options.device().index());
}

Json to_json(const ValidationReport& v) {
  Json j{{"geneval_score", v.geneval_score},
         {"ocr_score", v.ocr_score},
         {"mean_reward", v.mean_reward},
         {"geneval_std_error", v.geneval_std_error},
         {"mean_reward_std_error", v.mean_reward_std_error},
         {"mean_partial_reward", v.mean_partial_reward},
         {"mean_partial_reward_std_error", v.mean_partial_reward_std_error},
         {"mean_strict_reward", v.mean_strict_reward},
         {"mean_strict_reward_std_error", v.mean_strict_reward_std_error},
         {"samples", v.samples},
         {"seconds", v.seconds}};
  for (const auto& [name, score] : v.per_category)
    j["per_category"][name] = score;
  return j;
}

Json to_json(const IterationReport& r) {
  Json j{{"iteration", r.iteration},
         {"reward_mean", r.reward_mean},
         {"reward_std", r.reward_std},
         {"zero_std_ratio", r.zero_std_ratio},
         {"mean_abs_advantage", r.mean_abs_advantage},
         {"selected_variance", r.selected_variance},
         {"group_variance", r.group_variance},
         {"explore_seconds", r.explore_seconds},
         {"rollout_seconds", r.rollout_seconds},
         {"reward_seconds", r.reward_seconds},
         {"train_seconds", r.train_seconds},
         {"iteration_seconds", r.iteration_seconds},
         {"audit_seconds", r.audit_seconds},
         {"wall_seconds", r.wall_seconds},
         {"elapsed_seconds", r.elapsed_seconds},
         {"kl", r.kl},
         {"loss", r.loss},
         {"rollouts_reused", r.rollouts_reused},
         {"rollouts_sampled", r.rollouts_sampled},
         {"rollouts_off_policy", r.rollouts_off_policy},
         {"rollout_staleness_max", r.rollout_staleness_max},
         {"rollout_sampler_steps", r.rollout_sampler_steps},
         {"explore_sampler_steps", r.explore_sampler_steps},
         {"ratio_mean", r.ratio_mean},
         {"ratio_max_abs_log", r.ratio_max_abs_log},
         {"clip_fraction", r.clip_fraction},
         {"fallback_prompts", r.fallback_prompts},
         {"dead_lettered_tasks", r.dead_lettered_tasks},
         {"optimizer_steps", r.optimizer_steps},
         {"first_ratio_max_deviation", r.first_ratio_max_deviation}};
  if (r.explore_weights_version >= 0) j["explore_weights_version"] = r.explore_weights_version;
  if (r.ranks > 1) {
    j["ranks"] = r.ranks;
    j["allreduce_seconds"] = r.allreduce_seconds;
    j["allreduce_bytes"] = r.allreduce_bytes;
  }
  int rejected = 0;
  for (const auto& [reason, n] : r.trajectories_rejected) {
    j["trajectories_rejected_by_reason"][reason] = n;
    rejected += n;
  }
  j["trajectories_rejected"] = rejected;
  for (const auto& [name, mean] : r.reward_components)
    j["reward_components"][name] = mean;
  if (r.kendall_tau) j["kendall_tau"] = *r.kendall_tau;
  if (r.validation) j["validation"] = to_json(*r.validation);
  if (!r.group_rewards.empty()) j["group_rewards"] = r.group_rewards;
  if (!r.candidate_rewards.empty()) {
    j["candidate_rewards"] = r.candidate_rewards;
    j["selected"] = r.selected;
  }
  return j;
}

}  // namespace

struct GrpoTrainer::State {
  State(policy::Policy& policy, const GrpoOptions& o)
      : optimizer(policy.trainable_parameters(),
                  torch::optim::AdamWOptions(o.lr).weight_decay(o.weight_decay)),
        prompts(o.prompts ? o.prompts
                          : std::make_shared<const task::PromptGenerator>(policy.task_options())),
        validation_prompts(prompts->validation(o.validation_prompts)) {
    if (!o.run_dir.empty()) checkpoints.emplace(CheckpointStoreOptions{o.run_dir / "checkpoints"});
  }

  torch::optim::AdamW optimizer;
  std::optional<CheckpointStore> checkpoints;  // when run_dir is set
  std::shared_ptr<const task::PromptSource> prompts;
  std::vector<task::Prompt> validation_prompts;
  double wall_seconds = 0.0;  // training wall time of completed iterations (validation excluded)
};

GrpoTrainer::GrpoTrainer(GrpoOptions options, policy::Policy& policy,
                         reward::RewardFunction& reward, std::unique_ptr<SeedSource> seeds,
                         policy::Policy* reference)
    : o_(std::move(options)),
      policy_(policy),
      reward_(reward),
      seeds_(std::move(seeds)),
      reference_(reference),
      state_(std::make_unique<State>(policy, o_)) {
  if (o_.loss.kl_beta > 0 && reference_ == nullptr) {
    throw std::invalid_argument("trainer: kl_beta > 0 needs a reference policy");
  }
}

GrpoTrainer::~GrpoTrainer() = default;

std::vector<task::Prompt> GrpoTrainer::prompts_for(int64_t iteration) const {
  return run::iteration_prompts(*state_->prompts, o_.seed, iteration, o_.prompts_per_iteration);
}

ValidationReport GrpoTrainer::validate() {
  const auto start = Clock::now();
  const auto& prompts = state_->validation_prompts;
  std::vector<uint64_t> seeds;
  for (size_t i = 0; i < prompts.size(); ++i)
    seeds.push_back(seeds::derive(0, {seeds::kValidation, i}));
  sampler::SamplerOptions ode;
  ode.sde = false;
  ode.steps = o_.validation_steps;
  ode.shift = o_.sampler.shift;
  ValidationReport report;
  if (!policy_.is_native()) {
    // A user's prompts: the reward function grades them.
    const auto inputs = policy_.final_reward_inputs(policy_.sample(prompts, seeds, ode, 32));
    const auto scores = reward_.score(prompts, inputs);
    for (const auto& s : scores) {
      report.mean_reward += s.reward / static_cast<double>(scores.size());
      report.geneval_score += (s.correct ? 1.0 : 0.0) / static_cast<double>(scores.size());
    }
    report.mean_strict_reward = report.geneval_score;
    report.seconds = seconds_since(start);
    return report;
  }
  const auto images = policy_.final_images(policy_.sample(prompts, seeds, ode, 32));
  const auto evaluation = task::evaluate(prompts, images, policy_.task_options());
  report.geneval_score = evaluation.geneval_score;
  report.ocr_score = evaluation.ocr_score;
  report.mean_reward = evaluation.mean_reward;
  report.geneval_std_error = evaluation.geneval_std_error;
  report.mean_reward_std_error = evaluation.mean_reward_std_error;
  report.mean_partial_reward = evaluation.mean_partial_reward;
  report.mean_partial_reward_std_error = evaluation.mean_partial_reward_std_error;
  report.mean_strict_reward = evaluation.mean_strict_reward;
  report.mean_strict_reward_std_error = evaluation.mean_strict_reward_std_error;
  report.samples = static_cast<int>(prompts.size());
  for (const auto& [category, score] : evaluation.per_category) {
    report.per_category.emplace_back(std::string(task::name(category)), score);
  }
  for (size_t i = 0; i < prompts.size() && i < static_cast<size_t>(o_.validation_images); ++i) {
    const auto score = task::score(prompts[i], images[i], policy_.task_options());
    report.images.push_back({prompts[i], seeds[i], images[i], score.reward, score.correct});
  }
  report.seconds = seconds_since(start);
  return report;
}

// One iteration's data as run_iteration()'s phases build it, in group order (prompt i's G
// samples at i * G .. i * G + G - 1).
struct GrpoTrainer::Batch {
  int64_t iteration = 0;
  std::vector<task::Prompt> prompts;
  SeedSelection selection;
  rollout::StepWindow window;
  std::vector<task::Prompt> flat_prompts;  // by sample
  std::vector<uint64_t> flat_seeds;
  std::vector<std::optional<rollout::Rollout>> rollouts;  // this rank's samples only
  // The samples this rank rolled out here (not reused), their prompts, seeds and reward inputs.
  std::vector<size_t> missing;
  std::vector<task::Prompt> missing_prompts;
  std::vector<uint64_t> missing_seeds;
  std::vector<task::Image> missing_images;
  std::vector<double> rewards;  // every rank's samples
  std::vector<double> advantages;
};

// Sums over the trained sample-steps of an iteration (reduced over the ranks).
struct GrpoTrainer::TrainSums {
  double kl = 0, ratio = 0, max_abs_log = 0, loss = 0, first_deviation = 0;
  int64_t trained = 0, clipped = 0;
  int loss_terms = 0;
};

bool GrpoTrainer::owns(size_t sample) const {
  return owner_of(sample, o_.micro_batch, ranks()) == rank();
}

IterationReport GrpoTrainer::run_iteration(int64_t iteration) {
  const auto start = Clock::now();
  IterationReport report;
  report.iteration = iteration;
  report.rank = rank();
  report.ranks = ranks();
  Batch batch = select_seeds(iteration, report);
  roll_out(batch, report);
  check_stop();
  score(batch, report);
  // The staleness audit of stale exploration compares the v_{k-1} rewards with v_k, before the
  // update; otherwise v_k explored against v_{k+1}, after it.
  const bool stale_exploration = run::explores_stale_weights(o_.mode);
  if (stale_exploration) audit(batch, report);
  train(batch, report);
  if (!stale_exploration) audit(batch, report);
  // The audit is a measurement, not training work: it is kept out of the iteration's time.
  report.iteration_seconds = seconds_since(start) - report.audit_seconds;
  state_->wall_seconds += report.iteration_seconds;
  report.wall_seconds = state_->wall_seconds;
  return report;
}

GrpoTrainer::Batch GrpoTrainer::select_seeds(int64_t iteration, IterationReport& report) {
  const int g = o_.group_size;
  const int ranks = this->ranks();
  Batch batch;
  batch.iteration = iteration;
  batch.prompts = prompts_for(iteration);
  // Rank 0 selects (exploration's results are read, and acted on, once) and shares the seeds.
  SeedSelection& selection = batch.selection;
  if (rank() == 0) selection = seeds_->select(iteration, batch.prompts);
  check_stop();
  if (group_) {
    share_selection(
        *group_, selection,
        [&](size_t prompt, size_t index) {
          return owner_of(prompt * static_cast<size_t>(g) + index, o_.micro_batch, ranks);
        },
        policy_.tensor_options());
  }
  report.explore_seconds = selection.explore_seconds;
  report.selected_variance = selection.selected_variance;
  report.fallback_prompts = selection.fallback_prompts;
  report.dead_lettered_tasks = selection.dead_lettered_tasks;
  report.explore_weights_version = selection.explore_weights_version;
  report.explore_sampler_steps = selection.explore_sampler_steps;
  report.trajectories_rejected = selection.rejected_trajectories;
  return batch;
}

void GrpoTrainer::roll_out(Batch& batch, IterationReport& report) {
  // One group of G rollouts per prompt: reused ones as they are, the rest sampled on-policy
  // (SDE, v_k) in micro-batch chunks of the missing samples, in group order.
  const auto rollout_start = Clock::now();
  batch.window = rollout::trained_steps(o_.sampler.steps, o_.train_step_begin, o_.train_step_end);
  const auto& prompts = batch.prompts;
  auto& selection = batch.selection;
  auto& rollouts = batch.rollouts;
  for (size_t i = 0; i < prompts.size(); ++i) {
    for (size_t j = 0; j < selection.seeds[i].size(); ++j) {
      batch.flat_prompts.push_back(prompts[i]);
      batch.flat_seeds.push_back(selection.seeds[i][j]);
      rollouts.push_back(i < selection.rollouts.size() && j < selection.rollouts[i].size()
                             ? std::move(selection.rollouts[i][j])
                             : std::nullopt);
    }
  }
  for (size_t i = 0; i < rollouts.size(); ++i) {
    if (!owns(i)) {
      rollouts[i].reset();  // another rank's
      continue;
    }
    if (rollouts[i]) continue;
    batch.missing.push_back(i);
    batch.missing_prompts.push_back(batch.flat_prompts[i]);
    batch.missing_seeds.push_back(batch.flat_seeds[i]);
  }
  if (!batch.missing.empty()) {
    auto rollout_options = o_.sampler;
    rollout_options.sde = true;
    rollout_options.keep_trajectory = true;
    policy_.set_training(false);
    const auto chunks =
        policy_.sample(batch.missing_prompts, batch.missing_seeds, rollout_options, o_.micro_batch);
    batch.missing_images = policy_.final_reward_inputs(chunks);
    size_t next = 0;
    for (const auto& chunk : chunks) {
      for (auto& r : rollout::split(chunk, batch.window, batch.iteration))
        rollouts[batch.missing[next++]] = std::move(r);
    }
  }
  finish_device_work(policy_.tensor_options());
  report.rollout_seconds = seconds_since(rollout_start);
}

void GrpoTrainer::score(Batch& batch, IterationReport& report) {
  // Rewards (reused rollouts carry theirs) and advantages.
  const auto reward_start = Clock::now();
  const int g = o_.group_size;
  auto& rollouts = batch.rollouts;
  const auto& missing = batch.missing;
  if (!missing.empty()) {
    const auto scores = reward_.score(batch.missing_prompts, batch.missing_images);
    for (size_t m = 0; m < missing.size(); ++m) {
      rollouts[missing[m]]->reward = scores[m].reward;
      rollouts[missing[m]]->correct = scores[m].correct;
    }
    // Named parts of the reward: only when every rollout was scored here (reused ones carry
    // their total alone), so the mean is over the whole iteration.
    if (ranks() == 1 && missing.size() == rollouts.size() && !scores.empty()) {
      for (const auto& [name, value] : scores.front().components) {
        double sum = 0;
        for (const auto& s : scores) {
          for (const auto& [n, v] : s.components) {
            if (n == name) sum += v;
          }
        }
        report.reward_components.emplace_back(name, sum / static_cast<double>(scores.size()));
      }
    }
  }
  // Every sample's reward and provenance, each row filled by the rank that owns the sample
  // (summed over the ranks): reward, sampled here, off-policy, staleness.
  auto table = torch::zeros({static_cast<int64_t>(rollouts.size()), 4}, torch::kDouble);
  {
    auto rows = table.accessor<double, 2>();
    std::set<size_t> sampled(missing.begin(), missing.end());
    for (size_t i = 0; i < rollouts.size(); ++i) {
      if (!owns(i)) continue;
      const std::int64_t staleness = batch.iteration - rollouts[i]->weights_version;
      rows[static_cast<int64_t>(i)][0] = rollouts[i]->reward;
      rows[static_cast<int64_t>(i)][1] = sampled.count(i) ? 1.0 : 0.0;
      rows[static_cast<int64_t>(i)][2] = staleness > 0 ? 1.0 : 0.0;
      rows[static_cast<int64_t>(i)][3] = static_cast<double>(staleness);
    }
  }
  if (group_) share_sample_table(*group_, table, policy_.tensor_options().device());
  auto& rewards = batch.rewards;
  {
    const auto rows = table.accessor<double, 2>();
    for (int64_t i = 0; i < table.size(0); ++i) {
      rewards.push_back(rows[i][0]);
      report.rollouts_sampled += static_cast<int>(rows[i][1]);
      report.rollouts_off_policy += static_cast<int>(rows[i][2]);
      report.rollout_staleness_max =
          std::max(report.rollout_staleness_max, static_cast<std::int64_t>(rows[i][3]));
    }
  }
  report.rollouts_reused = static_cast<int>(rollouts.size()) - report.rollouts_sampled;
  report.rollout_sampler_steps =
      static_cast<std::int64_t>(report.rollouts_sampled) * o_.sampler.steps;
  auto advantage_options = o_.advantages;
  advantage_options.group_size = g;
  batch.advantages = rl::group_advantages(rewards, advantage_options);
  report.reward_mean = std::accumulate(rewards.begin(), rewards.end(), 0.0) / rewards.size();
  report.reward_std = std::sqrt(rl::variance(rewards));
  report.zero_std_ratio = rl::zero_std_group_ratio(rewards, g);
  for (const double a : batch.advantages)
    report.mean_abs_advantage += std::abs(a) / static_cast<double>(batch.advantages.size());
  {
    double v = 0;
    for (size_t i = 0; i < rewards.size(); i += g) {
      v += rl::variance(std::vector<double>(rewards.begin() + i, rewards.begin() + i + g));
    }
    report.group_variance = v / static_cast<double>(batch.prompts.size());
  }
  const SeedSelection& selection = batch.selection;
  // No exploration: report the rollout groups' variance.
  if (selection.candidate_rewards.empty()) report.selected_variance = report.group_variance;
  for (size_t i = 0; i < batch.prompts.size(); ++i) {
    report.group_rewards.emplace_back(rewards.begin() + i * g, rewards.begin() + (i + 1) * g);
    if (selection.candidate_rewards.empty()) continue;
    const auto& candidates = selection.candidate_seeds[i];
    std::vector<int> indices;
    for (uint64_t s : selection.seeds[i]) {
      const auto at = std::find(candidates.begin(), candidates.end(), s);
      indices.push_back(at == candidates.end() ? -1 : static_cast<int>(at - candidates.begin()));
    }
    report.candidate_rewards.push_back(selection.candidate_rewards[i]);
    report.selected.push_back(std::move(indices));
  }
  report.reward_seconds = seconds_since(reward_start);
}

void GrpoTrainer::audit(const Batch& batch, IterationReport& report) {
  const bool due = o_.audit_every > 0 && (batch.iteration + 1) % o_.audit_every == 0;
  if (!due || rank() != 0) return;
  const auto audit_start = Clock::now();
  report.kendall_tau = staleness_audit(batch.prompts, batch.selection, batch.rewards);
  report.audit_seconds = seconds_since(audit_start);
}

void GrpoTrainer::train(const Batch& batch, IterationReport& report) {
  // Clipped-ratio updates over the trained step window, in micro-batches of the group order.
  const auto train_start = Clock::now();
  policy_.set_training(true);
  const auto trainable = policy_.trainable_parameters();
  auto& optimizer = state_->optimizer;
  optimizer.zero_grad();
  int accumulated = 0, updates = 0;
  TrainSums sums;
  const auto& advantages = batch.advantages;
  const size_t total = batch.rollouts.size();
  const auto micro = static_cast<size_t>(o_.micro_batch);
  // The micro-batches with a non-zero advantage, in group order: every rank knows them, and an
  // update takes micro_batches_per_update of them, whichever ranks own them.
  std::vector<size_t> offsets;
  for (size_t offset = 0; offset < total; offset += micro) {
    const size_t count = std::min(micro, total - offset);
    if (std::any_of(advantages.begin() + offset, advantages.begin() + offset + count,
                    [](double a) { return a != 0.0; }))
      offsets.push_back(offset);
  }
  const auto step = [&] {
    if (group_) {
      const auto reduced = reduce_gradients(*group_, trainable, o_.gradient_bucket_bytes);
      report.allreduce_seconds += reduced.seconds;
      report.allreduce_bytes += reduced.bytes;
    }
    if (o_.grad_clip > 0) torch::nn::utils::clip_grad_norm_(trainable, o_.grad_clip);
    optimizer.step();
    optimizer.zero_grad();
    accumulated = 0;
    ++updates;
  };
  for (int epoch = 0; epoch < o_.inner_epochs; ++epoch) {
    for (size_t q = 0; q < offsets.size(); ++q) {
      check_stop();
      if (owns(offsets[q])) {
        train_micro_batch(batch, offsets[q], std::min(micro, total - offsets[q]),
                          epoch == 0 && q == 0, sums);
      }
      if (++accumulated == o_.micro_batches_per_update) step();
    }
  }
  if (accumulated > 0) step();
  if (group_) {  // the batch's statistics over every rank's micro-batches
    const auto device = policy_.tensor_options().device();
    const auto summed = reduce_values(
        *group_,
        {sums.kl, sums.ratio, static_cast<double>(sums.trained), static_cast<double>(sums.clipped),
         static_cast<double>(sums.loss_terms), sums.loss},
        parallel::ReduceOp::kSum, device);
    const auto maxima = reduce_values(*group_, {sums.max_abs_log, sums.first_deviation},
                                      parallel::ReduceOp::kMax, device);
    sums.kl = summed[0];
    sums.ratio = summed[1];
    sums.trained = static_cast<int64_t>(summed[2]);
    sums.clipped = static_cast<int64_t>(summed[3]);
    sums.loss_terms = static_cast<int>(summed[4]);
    sums.loss = summed[5];
    sums.max_abs_log = maxima[0];
    sums.first_deviation = maxima[1];
  }
  report.first_ratio_max_deviation = sums.first_deviation;
  report.loss = sums.loss_terms ? sums.loss / sums.loss_terms : 0.0;
  report.optimizer_steps = updates;
  policy_.set_training(false);
  report.kl = sums.loss_terms ? sums.kl / sums.loss_terms : 0.0;
  if (sums.trained > 0) {
    report.ratio_mean = sums.ratio / static_cast<double>(sums.trained);
    report.clip_fraction = static_cast<double>(sums.clipped) / static_cast<double>(sums.trained);
  }
  report.ratio_max_abs_log = sums.max_abs_log;
  finish_device_work(policy_.tensor_options());
  report.train_seconds = seconds_since(train_start);
}

void GrpoTrainer::train_micro_batch(const Batch& batch, size_t offset, size_t count, bool first,
                                    TrainSums& sums) {
  const auto grid = sampler::time_grid(o_.sampler.steps, o_.sampler.shift);
  const int begin = batch.window.begin;
  const int end = batch.window.end;
  const int window_size = std::max(1, batch.window.size());
  const auto b = static_cast<int64_t>(count);
  std::vector<double> chunk_adv(batch.advantages.begin() + offset,
                                batch.advantages.begin() + offset + count);
  std::vector<task::Prompt> chunk_prompts(batch.flat_prompts.begin() + offset,
                                          batch.flat_prompts.begin() + offset + count);
  // [b, W + 1, C, H, W] latents and [b, W] old log-probs of the micro-batch.
  std::vector<at::Tensor> latent_parts, log_prob_parts;
  for (size_t i = offset; i < offset + count; ++i) {
    latent_parts.push_back(batch.rollouts[i]->latents.to(policy_.tensor_options()));
    log_prob_parts.push_back(batch.rollouts[i]->log_probs.to(policy_.tensor_options()));
  }
  const auto latents = torch::stack(latent_parts);
  const auto old_log_probs = torch::stack(log_prob_parts);
  auto adv = torch::tensor(chunk_adv, torch::kDouble).to(policy_.tensor_options());
  const auto active = adv != 0;
  for (int j = begin; j < end; ++j) {
    auto x = latents.select(1, j - begin);
    auto x_next = latents.select(1, j - begin + 1);
    const auto coefficients =
        sampler::sde_coefficients(grid[j], grid[j + 1], o_.sampler.noise_level, grid[1]);
    auto t = torch::full({b}, grid[j], policy_.tensor_options());
    // Conditioned per step, as a forward from tokens would: the MMDiT's text encoder trains.
    const auto condition = policy_.condition(chunk_prompts);
    auto mean = sampler::sde_mean(x, policy_.velocity(x, t, condition), coefficients);
    auto logp = sampler::sde_log_prob(x_next, mean, coefficients);
    at::Tensor mean_ref;
    if (o_.loss.kl_beta > 0) {
      torch::NoGradGuard no_grad;
      mean_ref = sampler::sde_mean(
          x, reference_->velocity(x, t, reference_->condition(chunk_prompts)), coefficients);
    }
    const auto log_prob_old = old_log_probs.select(1, j - begin);
    auto terms =
        rl::grpo_loss(logp, log_prob_old, adv, mean, mean_ref, coefficients.std_dev, o_.loss);
    (terms.loss / (window_size * o_.micro_batches_per_update)).backward();
    if (first) {
      sums.first_deviation =
          std::max(sums.first_deviation, (terms.ratio - 1).abs().max().item<double>());
    }
    const auto abs_log = (logp.detach() - log_prob_old).abs().to(torch::kDouble);
    sums.max_abs_log =
        std::max(sums.max_abs_log, torch::where(active, abs_log, 0.0).max().item<double>());
    sums.ratio += torch::where(active, terms.ratio.to(torch::kDouble), 0.0).sum().item<double>();
    sums.clipped += (terms.clipped & active).sum().item<int64_t>();
    sums.trained += terms.active;
    sums.kl += terms.kl.item<double>();
    sums.loss += terms.loss.item<double>();
    ++sums.loss_terms;
  }
}

std::optional<double> GrpoTrainer::staleness_audit(const std::vector<task::Prompt>& prompts,
                                                   const SeedSelection& selection,
                                                   const std::vector<double>& rewards) {
  const int g = o_.group_size;
  const bool explored = !selection.candidate_rewards.empty();
  const int audited = std::min<int>(o_.audit_prompts, static_cast<int>(prompts.size()));
  std::vector<task::Prompt> audit_prompts;
  std::vector<uint64_t> audit_seeds;
  std::vector<std::vector<double>> stale(audited);
  for (int i = 0; i < audited; ++i) {
    const auto& seeds = explored ? selection.candidate_seeds[i] : selection.seeds[i];
    for (size_t j = 0; j < seeds.size(); ++j) {
      audit_prompts.push_back(prompts[i]);
      audit_seeds.push_back(seeds[j]);
      stale[i].push_back(explored ? selection.candidate_rewards[i][j] : rewards[i * g + j]);
    }
  }
  auto audit_options = o_.sampler;
  audit_options.keep_trajectory = false;
  if (explored && o_.exploration_steps > 0) audit_options.steps = o_.exploration_steps;
  const auto audit_images = policy_.final_reward_inputs(
      policy_.sample(audit_prompts, audit_seeds, audit_options, o_.micro_batch));
  const auto fresh = reward_.score(audit_prompts, audit_images);
  double tau_sum = 0;
  int tau_count = 0;
  size_t k = 0;
  for (int i = 0; i < audited; ++i) {
    std::vector<double> fresh_rewards;
    for (size_t j = 0; j < stale[i].size(); ++j)
      fresh_rewards.push_back(fresh[k++].reward);
    if (auto tau = rl::kendall_tau_b(stale[i], fresh_rewards)) {
      tau_sum += *tau;
      ++tau_count;
    }
  }
  if (tau_count == 0) return std::nullopt;
  return tau_sum / tau_count;
}

void GrpoTrainer::check_stop() const {
  if (stop_.stop_requested()) throw Abandoned{};
}

bool GrpoTrainer::run(const std::function<void(const IterationReport&)>& on_iteration,
                      std::stop_token stop) {
  stop_ = std::move(stop);
  const bool leader = rank() == 0;  // the one rank that writes, validates and publishes
  if (!o_.run_dir.empty() && leader) durable::create_directories(o_.run_dir);
  // Each line is on disk before the checkpoint of its iteration (resume drops later ones).
  auto write_metrics = [&](const IterationReport& r) {
    if (o_.run_dir.empty() || !leader) return;
    durable::append_file(o_.run_dir / "metrics.jsonl", to_json(r).dump() + "\n");
  };
  // A validation point after `version` iterations; its time is kept off the elapsed time line.
  double measured_seconds = 0.0;
  const auto validation_point = [&](int64_t version) -> std::optional<ValidationReport> {
    const auto start = Clock::now();
    std::optional<ValidationReport> v;
    if (o_.defer_validation) {
      save_validation_weights(version);
    } else {
      v = validate();
    }
    measured_seconds += seconds_since(start);
    return v;
  };
  try {
    if (next_iteration_ == 0 && leader) {
      IterationReport base;
      base.iteration = -1;
      base.validation = validation_point(0);
      check_stop();
      write_metrics(base);
      if (on_iteration) on_iteration(base);
    }
    const auto timeline_start = Clock::now();
    const double elapsed_before = state_->wall_seconds;  // a resumed run continues its time line
    ValidationSchedule schedule(o_.validate_every, o_.validate_every_seconds, elapsed_before);
    measured_seconds = 0.0;
    if (observer_ && leader) observer_->weights_ready(next_iteration_, policy_, nullptr);
    for (int64_t k = next_iteration_; k < o_.iterations; ++k) {
      check_stop();
      auto report = run_iteration(k);
      if (group_ && o_.checksum_every > 0 && (k + 1) % o_.checksum_every == 0) {
        check_weights_agree(*group_, policy_.trainable_parameters(), k,
                            policy_.tensor_options().device());
      }
      measured_seconds += report.audit_seconds;
      report.elapsed_seconds = elapsed_before + seconds_since(timeline_start) - measured_seconds;
      bool budget_spent = o_.max_seconds > 0 && report.elapsed_seconds >= o_.max_seconds;
      if (group_ && o_.max_seconds > 0) {  // every rank ends at the same iteration
        budget_spent = reduce_values(*group_, {budget_spent ? 1.0 : 0.0}, parallel::ReduceOp::kMax,
                                     policy_.tensor_options().device())[0] > 0;
      }
      if (leader &&
          (schedule.due(k + 1, report.elapsed_seconds) || k + 1 == o_.iterations || budget_spent)) {
        report.validation = validation_point(k + 1);
        schedule.validated(report.elapsed_seconds);
      }
      check_stop();
      write_metrics(report);
      if (leader) {
        save_checkpoint(k);
        seeds_->iteration_done(k);
      }
      next_iteration_ = k + 1;
      // Published only after the checkpoint: a restarted trainer republishes identical weights.
      if (observer_ && leader) observer_->weights_ready(next_iteration_, policy_, &report);
      if (on_iteration) on_iteration(report);
      if (budget_spent) break;
    }
  } catch (const Abandoned&) {
    return false;
  } catch (const outage::RetryStopped&) {  // stopped while waiting for Redis
    return false;
  } catch (const parallel::CommunicatorError&) {
    if (stop_.stop_requested()) return false;  // a peer stopped first and left the group
    throw;
  }
  if (observer_ && leader) observer_->finished(next_iteration_);
  return true;
}

void GrpoTrainer::save_checkpoint(int64_t completed_iteration) {
  if (!state_->checkpoints) return;
  std::ostringstream optimizer;
  torch::save(state_->optimizer, optimizer);
  const Json state{{"completed_iteration", completed_iteration},
                   {"wall_seconds", state_->wall_seconds},
                   {"seed", o_.seed},
                   {"mode", run::to_string(o_.mode)}};
  // The seed source's own state (sync-stale: the weights it explores the next iteration with).
  auto files = seeds_->checkpoint_files();
  files["model.safetensors"] = model::encode_safetensors(policy_.state());
  files["optimizer.pt"] = std::move(optimizer).str();
  state_->checkpoints->save(completed_iteration, files, state);
}

void GrpoTrainer::save_validation_weights(int64_t version) {
  if (o_.run_dir.empty()) return;
  const auto dir = o_.run_dir / "validation";
  std::filesystem::create_directories(dir);
  char name[64];
  std::snprintf(name, sizeof name, "weights-%06lld.safetensors", static_cast<long long>(version));
  model::save_safetensors(dir / name, policy_.state());  // atomic: temp file, fsync, rename
}

int GrpoTrainer::validate_deferred(
    const std::function<void(int64_t version, const ValidationReport&)>& on_validation) {
  const auto dir = o_.run_dir / "validation";
  const auto out_path = o_.run_dir / "validation.jsonl";
  std::set<int64_t> done;
  if (std::ifstream in(out_path); in) {
    for (std::string line; std::getline(in, line);) {
      try {
        done.insert(Json::parse(line).at("version").get<int64_t>());
      } catch (const Json::exception&) {
        // a torn last line from an interrupted run: scored again
      }
    }
  }
  std::map<int64_t, std::filesystem::path> pending;
  if (std::filesystem::exists(dir)) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      const auto n = entry.path().filename().string();
      if (!n.starts_with("weights-") || !n.ends_with(".safetensors")) continue;
      const int64_t version = std::stoll(n.substr(8, n.size() - 8 - 12));
      if (!done.count(version)) pending.emplace(version, entry.path());
    }
  }
  int scored = 0;
  for (const auto& [version, path] : pending) {
    policy_.load_state(model::load_safetensors(path));
    const auto v = validate();
    Json line{{"version", version}, {"iteration", version - 1}, {"validation", to_json(v)}};
    std::ofstream(out_path, std::ios::app) << line.dump() << "\n";
    if (on_validation) on_validation(version, v);
    ++scored;
  }
  return scored;
}

int64_t GrpoTrainer::resume() {
  if (ranks() > 1) return resume_group();
  return resume_alone();
}

int64_t GrpoTrainer::resume_alone() {
  if (!state_->checkpoints) return next_iteration_;
  const auto checkpoint = state_->checkpoints->load_newest();
  if (!checkpoint) return next_iteration_;
  policy_.load_state(model::decode_safetensors(checkpoint->files.at("model.safetensors")));
  std::istringstream optimizer(checkpoint->files.at("optimizer.pt"));
  torch::load(state_->optimizer, optimizer);
  seeds_->restore(checkpoint->files);
  const Json& state = checkpoint->state;
  next_iteration_ = state.at("completed_iteration").get<int64_t>() + 1;
  state_->wall_seconds = state.at("wall_seconds").get<double>();
  // Metrics of iterations after the checkpoint were never checkpointed: drop them, so the
  // resumed run's metrics form one unbroken sequence.
  const auto metrics = o_.run_dir / "metrics.jsonl";
  if (std::filesystem::exists(metrics)) {
    std::ifstream in(metrics);
    std::ostringstream kept;
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      try {
        if (Json::parse(line).at("iteration").get<int64_t>() < next_iteration_)
          kept << line << "\n";
      } catch (const Json::exception&) {
        // a torn last line from a crash
      }
    }
    in.close();
    durable::write_file(metrics, kept.str());
  }
  return next_iteration_;
}

}  // namespace spotlight::trainer

namespace spotlight::trainer {

int64_t GrpoTrainer::resume_group() {
  // Rank 0 resumes from its checkpoint store, then hands every rank its weights, optimizer state
  // and position (the others need no access to run_dir), and the ranks check that they agree.
  const bool leader = rank() == 0;
  if (leader) resume_alone();
  std::string bytes;
  if (leader) {
    std::ostringstream optimizer;
    torch::save(state_->optimizer, optimizer);
    const auto text = std::move(optimizer).str();
    const auto model = model::encode_safetensors(policy_.state());
    const Json j{{"next_iteration", next_iteration_},
                 {"wall_seconds", state_->wall_seconds},
                 {"model", Json::binary(std::vector<std::uint8_t>(model.begin(), model.end()))},
                 {"optimizer", Json::binary(std::vector<std::uint8_t>(text.begin(), text.end()))}};
    const auto cbor = Json::to_cbor(j);
    bytes.assign(cbor.begin(), cbor.end());
  }
  broadcast_bytes(*group_, bytes, policy_.tensor_options().device());
  if (!leader) {
    const Json j = Json::from_cbor(bytes);
    const auto& model = j.at("model").get_binary();
    policy_.load_state(model::decode_safetensors(std::string(model.begin(), model.end())));
    const auto& optimizer = j.at("optimizer").get_binary();
    std::istringstream in(std::string(optimizer.begin(), optimizer.end()));
    torch::load(state_->optimizer, in);
    next_iteration_ = j.at("next_iteration").get<int64_t>();
    state_->wall_seconds = j.at("wall_seconds").get<double>();
  }
  check_weights_agree(*group_, policy_.trainable_parameters(), next_iteration_ - 1,
                      policy_.tensor_options().device());
  return next_iteration_;
}

}  // namespace spotlight::trainer
