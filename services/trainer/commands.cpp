#include "services/trainer/commands.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <stop_token>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "common/config/error.hpp"
#include "common/durable/durable_file.hpp"
#include "common/log/log.hpp"
#include "common/model/safetensors.hpp"
#include "common/parallel/process_group.hpp"
#include "common/reward/reward_function.hpp"
#include "common/rollout/rollout.hpp"
#include "common/service/exit_codes.hpp"
#include "common/signals/stop_signals.hpp"
#include "services/trainer/data_parallel.hpp"
#include "services/trainer/pretrain_cache.hpp"
#include "services/trainer/trainer_config.hpp"

namespace spotlight::trainer {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

void apply_threads(const config::Config& c) {
  if (const auto threads = c.get<int>("run.threads"); threads > 0) torch::set_num_threads(threads);
}

fs::path base_output(const config::Config& c) {
  const auto& out = c.get_string("pretrain.output");
  return out.empty() ? fs::path(c.get_string("run.dir")) / "base.safetensors" : fs::path(out);
}

void load_base(policy::Policy& policy, const config::Config& c) {
  const auto& base = c.get_string("model.base");
  if (base.empty()) return;
  if (std::error_code error; !fs::is_regular_file(base, error)) {
    throw config::ConfigError("model.base", "config: 'model.base' " + base +
                                                " is not a readable checkpoint file (in " +
                                                c.origin("model.base") + ")");
  }
  policy.load_state(model::load_safetensors(base));
  SPOTLIGHT_LOG(info) << "loaded base weights from " << base;
}

// The embedded task is scored in-process (the reward service's own scorer); a prompt file's
// prompts only by the reward service (run::check_model_config requires reward.endpoint), whose
// client the services build provides (hooks.remote_reward).
std::unique_ptr<reward::RewardFunction> make_reward(const config::Config& c,
                                                    const policy::Policy& policy,
                                                    TrainHooks& hooks) {
  if (config::get_choice(c, "task.kind", run::kTaskKinds) != run::TaskKind::kPromptFile) {
    return reward::make_task_reward(policy.task_options());
  }
  auto remote = hooks.remote_reward(c);
  if (!remote) {
    throw config::ConfigError("task.kind",
                              "config: 'task.kind' prompt_file is scored by the reward service, "
                              "whose client this build lacks (the compute core alone, "
                              "SPOTLIGHT_CORE_ONLY): use the embedded task");
  }
  // A reward outside the service's declared range, or not finite, stops the run with the
  // service's name instead of being trained on.
  return reward::make_checked_reward(std::move(remote));
}

std::string format_validation(const ValidationReport& v) {
  std::ostringstream s;
  if (v.per_category.empty()) {  // a prompt file: graded by the reward function
    s << std::fixed << std::setprecision(4) << "val reward " << v.mean_reward << " correct "
      << std::setprecision(3) << v.geneval_score;
    return s.str();
  }
  s << std::fixed << std::setprecision(3) << "val geneval " << v.geneval_score << " reward "
    << v.mean_reward << " (";
  for (size_t i = 0; i < v.per_category.size(); ++i) {
    s << (i ? " " : "") << v.per_category[i].first << " " << std::setprecision(2)
      << v.per_category[i].second;
  }
  s << ")";
  return s.str();
}

std::chrono::milliseconds config_millis(const config::Config& c, const char* key) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::duration<double>(c.get_double(key)));
}

// trainer.ranks > 1: this process's rank of the trainer group, formed through the torchrun-style
// environment (process_group.hpp); null for one rank.
std::unique_ptr<parallel::Communicator> open_trainer_group(const config::Config& c,
                                                           const std::string& device) {
  const int ranks = c.get<int>("trainer.ranks");
  parallel::ProcessGroupOptions o;
  o.world_size = ranks;
  o.rendezvous_timeout = config_millis(c, "trainer.rendezvous_timeout_seconds");
  o.group.device = device;
  o.group.timeout = config_millis(c, "trainer.collective_timeout_seconds");
  o.group.label = "trainer";
  try {
    o = parallel::process_group_from_env(o);
  } catch (const std::invalid_argument& e) {
    throw config::ConfigError("trainer.ranks", std::string("config: 'trainer.ranks': ") + e.what());
  }
  if (o.world_size != ranks) {
    throw config::ConfigError("trainer.ranks", "config: 'trainer.ranks' is " +
                                                   std::to_string(ranks) + " but WORLD_SIZE is " +
                                                   std::to_string(o.world_size));
  }
  if (ranks == 1) return nullptr;
  if (std::getenv("RANK") == nullptr) {
    throw config::ConfigError(
        "trainer.ranks", "config: 'trainer.ranks' " + std::to_string(ranks) + " needs RANK (0.." +
                             std::to_string(ranks - 1) +
                             "), WORLD_SIZE, MASTER_ADDR and MASTER_PORT in each process's "
                             "environment (spotlight-cluster --trainer-ranks, compose and the "
                             "Kubernetes manifests set them)");
  }
  const auto start = std::chrono::steady_clock::now();
  SPOTLIGHT_LOG(info) << "rank " << o.rank << " of " << ranks << ": joining the trainer group at "
                      << o.master_addr << ":" << o.master_port;
  auto group = parallel::open_process_group(o);
  SPOTLIGHT_LOG(info)
      << "rank " << o.rank << " of " << ranks << ": group formed (" << group->backend() << ") in "
      << std::fixed << std::setprecision(3)
      << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s";
  return group;
}

// One GPU per rank on a node: device "cuda" becomes cuda:LOCAL_RANK when LOCAL_RANK is set.
std::string rank_device(const std::string& device) {
  const char* local_rank = std::getenv("LOCAL_RANK");
  if (device != "cuda" || local_rank == nullptr) return device;
  return device + ":" + local_rank;
}

}  // namespace

bool core_mode(run::ExplorationMode mode) {
  return !run::needs_services(mode);
}

namespace {

// The configuration run_train needs beyond the schema's own checks: a mode this build provides
// and a run directory it can write.
void check_train_config(const GrpoOptions& options, const TrainHooks& hooks) {
  if (!core_mode(options.mode) && !hooks.supports(options.mode)) {
    throw config::ConfigError("exploration.mode",
                              "config: 'exploration.mode' " +
                                  std::string(run::to_string(options.mode)) +
                                  " needs the services build (this trainer is the compute core "
                                  "alone, SPOTLIGHT_CORE_ONLY): use none, sync or sync-stale");
  }
  try {
    durable::check_writable_directory(options.run_dir);
  } catch (const durable::WriteError& e) {
    throw config::ConfigError("run.dir", std::string("config: 'run.dir': ") + e.what());
  }
}

// The KL term's frozen base (null without KL): a copy of the loaded policy, rank 0's in a group
// (the other ranks need no model.base of their own).
std::unique_ptr<policy::Policy> make_reference(const GrpoOptions& options,
                                               const policy::PolicyOptions& policy_config,
                                               const config::Config& c,
                                               const policy::Policy& policy,
                                               parallel::Communicator* group) {
  if (options.loss.kl_beta <= 0) return nullptr;
  auto reference = std::make_unique<policy::Policy>(policy_config, task::task_options(c));
  reference->copy_weights_from(policy);
  if (group) {
    const bool leader = group->rank() == 0;
    std::string bytes;
    if (leader) bytes = model::encode_safetensors(reference->state());
    broadcast_bytes(*group, bytes, policy.tensor_options().device());
    if (!leader) reference->load_state(model::decode_safetensors(bytes));
  }
  return reference;
}

ExplorationOptions exploration_options_of(const GrpoOptions& options) {
  ExplorationOptions exploration;
  exploration.group_size = options.group_size;
  exploration.candidates = options.candidates;
  exploration.sampler = options.sampler;
  if (options.exploration_steps > 0) exploration.sampler.steps = options.exploration_steps;
  exploration.chunk = options.micro_batch * 2;
  exploration.run_seed = options.seed;
  exploration.reuse = options.reuse;
  exploration.rollout_steps = options.sampler.steps;
  exploration.window = rollout::trained_steps(options.sampler.steps, options.train_step_begin,
                                              options.train_step_end);
  return exploration;
}

// The seed source of exploration.mode: the core's (none, sync, sync-stale) or the hooks'; ranks
// other than 0 get random seeds they are never asked for (rank 0 selects for the group).
std::unique_ptr<SeedSource> make_seed_source(const GrpoOptions& options,
                                             const ExplorationOptions& exploration,
                                             policy::Policy& policy, reward::RewardFunction& reward,
                                             TrainHooks& hooks, bool leader, std::stop_token stop) {
  if (!leader || options.mode == run::ExplorationMode::kNone)
    return make_random_seed_source(exploration);
  if (options.mode == run::ExplorationMode::kSync)
    return make_sync_seed_source(exploration, policy, reward);
  if (options.mode == run::ExplorationMode::kSyncStale)
    return make_sync_stale_seed_source(exploration, policy, reward);
  return hooks.seed_source(options, exploration, policy, stop);
}

// The run's totals over its iterations, for summary.json (per iteration: metrics.jsonl).
struct TrainTally {
  std::optional<ValidationReport> first_validation, last_validation;
  double last_wall = 0;
  std::vector<double> taus;
  double explore_seconds = 0, iteration_seconds = 0;
  int fallback_prompts = 0, dead_lettered_tasks = 0, iterations_run = 0;
  std::int64_t reused = 0, sampled = 0, off_policy = 0, rejected = 0, rollout_steps = 0;
  double max_abs_log_ratio = 0, clip_fraction_sum = 0, ratio_sum = 0;

  void add(const IterationReport& r) {
    last_wall = r.wall_seconds;
    explore_seconds += r.explore_seconds;
    iteration_seconds += r.iteration_seconds;
    fallback_prompts += r.fallback_prompts;
    dead_lettered_tasks += r.dead_lettered_tasks;
    ++iterations_run;
    reused += r.rollouts_reused;
    sampled += r.rollouts_sampled;
    off_policy += r.rollouts_off_policy;
    rollout_steps += r.rollout_sampler_steps;
    for (const auto& [reason, n] : r.trajectories_rejected)
      rejected += n;
    max_abs_log_ratio = std::max(max_abs_log_ratio, r.ratio_max_abs_log);
    clip_fraction_sum += r.clip_fraction;
    ratio_sum += r.ratio_mean;
    if (r.kendall_tau) taus.push_back(*r.kendall_tau);
    if (r.validation) last_validation = r.validation;
  }

  Json summary(const GrpoOptions& options) const {
    Json summary{{"mode", run::to_string(options.mode)},
                 {"seed", options.seed},
                 {"iterations", options.iterations},
                 {"train_wall_seconds", last_wall}};
    if (first_validation) summary["base_geneval_score"] = first_validation->geneval_score;
    if (first_validation) summary["base_mean_reward"] = first_validation->mean_reward;
    if (last_validation) summary["final_geneval_score"] = last_validation->geneval_score;
    if (last_validation) summary["final_ocr_score"] = last_validation->ocr_score;
    if (last_validation) summary["final_mean_reward"] = last_validation->mean_reward;
    if (!taus.empty()) summary["kendall_tau"] = taus;
    if (iterations_run > 0) {
      // explore_seconds is exploration on the critical path: sync explores, async waits for seeds.
      summary["mean_explore_seconds_on_critical_path"] = explore_seconds / iterations_run;
      summary["mean_iteration_seconds"] = iteration_seconds / iterations_run;
      summary["fallback_prompts"] = fallback_prompts;
      summary["dead_lettered_tasks"] = dead_lettered_tasks;
      summary["reuse"] = {{"setting", config::name_of(run::kReuses, options.reuse)},
                          {"rollouts_reused", reused},
                          {"rollouts_sampled", sampled},
                          {"rollouts_off_policy", off_policy},
                          {"trajectories_rejected", rejected},
                          {"rollout_sampler_steps", rollout_steps},
                          {"ratio_mean", ratio_sum / iterations_run},
                          {"ratio_max_abs_log", max_abs_log_ratio},
                          {"clip_fraction_mean", clip_fraction_sum / iterations_run}};
    }
    return summary;
  }
};

// The leader's line for one iteration.
std::string iteration_line(const IterationReport& r, int iterations) {
  std::ostringstream line;
  line << std::fixed << std::setprecision(3) << "iter " << r.iteration + 1 << "/" << iterations
       << " reward " << r.reward_mean << " zero-std " << std::setprecision(2) << r.zero_std_ratio
       << " sel-var " << std::setprecision(4) << r.selected_variance << std::setprecision(1)
       << " | " << r.iteration_seconds << " s (explore " << r.explore_seconds << ", rollout "
       << r.rollout_seconds << ", train " << r.train_seconds << ")";
  if (r.rollouts_reused > 0) {
    line << " reused " << r.rollouts_reused << "/" << r.rollouts_reused + r.rollouts_sampled;
    if (r.rollouts_off_policy > 0) {
      line << std::setprecision(4) << " ratio " << r.ratio_mean << " max|log| "
           << r.ratio_max_abs_log << " clipped " << std::setprecision(2) << r.clip_fraction;
    }
  }
  // Prompts trained on random seeds because too little was explored in time, and candidates
  // that will never come (dead-lettered: an operator should look at the queue's dead letters).
  if (r.fallback_prompts > 0) line << " fallback " << r.fallback_prompts;
  if (r.dead_lettered_tasks > 0) line << " dead-lettered " << r.dead_lettered_tasks;
  if (r.kendall_tau) line << " tau " << std::setprecision(2) << *r.kendall_tau;
  if (r.ranks > 1) {
    line << std::setprecision(3) << " | " << r.ranks << " ranks, all-reduce " << r.allreduce_seconds
         << " s " << r.allreduce_bytes << " bytes";
  }
  if (r.validation) line << " | " << format_validation(*r.validation);
  return line.str();
}

// The last line of a finished run: validation from the base to the end.
void log_done(const TrainTally& tally) {
  if (!tally.first_validation || !tally.last_validation) return;
  const ValidationReport& first = *tally.first_validation;
  const ValidationReport& last = *tally.last_validation;
  if (first.per_category.empty()) {  // a prompt file: the reward service grades validation
    SPOTLIGHT_LOG(info) << std::fixed << std::setprecision(4) << "done: validation reward "
                        << first.mean_reward << " -> " << last.mean_reward << " (" << std::showpos
                        << last.mean_reward - first.mean_reward << std::noshowpos << ") in "
                        << std::setprecision(1) << tally.last_wall << " s of training";
  } else {
    SPOTLIGHT_LOG(info) << std::fixed << std::setprecision(3) << "done: validation geneval "
                        << first.geneval_score << " -> " << last.geneval_score << " ("
                        << std::showpos << last.geneval_score - first.geneval_score
                        << std::noshowpos << ") in " << std::setprecision(1) << tally.last_wall
                        << " s of training";
  }
}

}  // namespace

int run_pretrain(const config::Config& c) {
  policy::check_device(c);
  const std::string& cache_dir = c.get_string("pretrain.cache_dir");
  if (!cache_dir.empty() && !c.get_string("pretrain.output").empty()) {
    throw config::ConfigError("pretrain.cache_dir",
                              "config: set 'pretrain.cache_dir' or 'pretrain.output', not both");
  }
  const auto options = pretrain_options(c);
  const std::string key = recipe_key(c);
  fs::path out = cache_dir.empty() ? base_output(c) : cached_base(cache_dir, key);
  if (!cache_dir.empty() && fs::exists(out)) {
    SPOTLIGHT_LOG(info) << "using the cached base model " << out.string() << " (recipe key " << key
                        << ")";
    std::cout << out.string() << std::endl;
    return 0;
  }
  const fs::path dir = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  try {
    durable::check_writable_directory(dir);
  } catch (const durable::WriteError& e) {
    const char* k = !cache_dir.empty()                         ? "pretrain.cache_dir"
                    : !c.get_string("pretrain.output").empty() ? "pretrain.output"
                                                               : "run.dir";
    throw config::ConfigError(k, std::string("config: '") + k + "': " + e.what());
  }
  apply_threads(c);
  if (config::get_choice(c, "model.kind", run::kModelKinds) != run::ModelKind::kNative) {
    SPOTLIGHT_LOG(error) << "pretrain trains the built-in MMDiT (model.kind native); a "
                            "TorchScript model comes pretrained";
    return 2;
  }
  policy::Policy policy(policy_options(c), task::task_options(c));
  SPOTLIGHT_LOG(info) << "pretraining preset " << c.get_string("model.preset") << " for "
                      << options.steps << " steps of " << options.batch << " images (recipe key "
                      << key << ")";
  const auto report = pretrain(policy, options, [](const PretrainProgress& p) {
    SPOTLIGHT_LOG(info) << "pretrain step " << p.step << " loss " << std::fixed
                        << std::setprecision(4) << p.loss << " " << std::setprecision(1)
                        << p.seconds << " s";
  });
  const bool stopped_early = report.steps < options.steps;
  if (stopped_early) {
    SPOTLIGHT_LOG(warn) << "pretraining stopped early by pretrain.max_seconds ("
                        << options.max_seconds << " s) at step " << report.steps << " of "
                        << options.steps << ": this base is not the recipe's output";
    if (!cache_dir.empty()) out = cached_base(cache_dir, key, report.steps);
  }
  auto state = policy.state();
  state.metadata = {{"preset", c.get_string("model.preset")},
                    {"pretrain.recipe_key", key},
                    {"pretrain.steps", std::to_string(report.steps)},
                    {"pretrain.steps_planned", std::to_string(options.steps)},
                    {"pretrain.stopped_early", stopped_early ? "true" : "false"},
                    {"pretrain.seed", std::to_string(options.seed)},
                    {"pretrain.batch", std::to_string(options.batch)},
                    {"pretrain.lr", std::to_string(options.lr)}};
  // The checkpoint appears under its name last, after its summary: present means complete.
  const fs::path partial = out.string() + ".partial";
  model::save_safetensors(partial, state);
  GrpoOptions g = grpo_options(c);
  g.run_dir.clear();
  auto reward = reward::make_task_reward(policy.task_options());
  GrpoTrainer evaluator(g, policy, *reward, make_random_seed_source({}));
  const auto validation = evaluator.validate();
  SPOTLIGHT_LOG(info) << "pretrained in " << std::fixed << std::setprecision(1) << report.seconds
                      << " s, " << report.steps << "/" << options.steps << " steps, final loss "
                      << std::setprecision(4) << report.final_loss << "; base "
                      << format_validation(validation) << "; wrote " << out.string();
  Json summary{{"pretrain_seconds", report.seconds},
               {"steps", report.steps},
               {"steps_planned", options.steps},
               {"stopped_early", stopped_early},
               {"max_seconds", options.max_seconds},
               {"recipe_key", key},
               {"final_loss", report.final_loss},
               {"base_geneval_score", validation.geneval_score},
               {"base_ocr_score", validation.ocr_score},
               {"base_mean_reward", validation.mean_reward},
               {"checkpoint", out.string()}};
  durable::write_file(out.string() + ".json", summary.dump(2) + "\n");
  durable::rename(partial, out);
  std::cout << out.string() << std::endl;  // the only line on stdout: for scripts
  return 0;
}

int run_train(const config::Config& c, std::stop_token stop, TrainHooks& hooks) {
  policy::check_device(c);
  const auto options = grpo_options(c);
  check_train_config(options, hooks);
  apply_threads(c);
  auto policy_config = policy_options(c);
  if (c.get<int>("trainer.ranks") > 1) policy_config.device = rank_device(policy_config.device);
  const auto group = open_trainer_group(c, policy_config.device);
  const int rank = group ? group->rank() : 0;
  const bool leader = rank == 0;  // writes the run's files; the others train and report metrics
  if (leader) durable::write_file(options.run_dir / "config.yaml", c.dump());
  policy::Policy policy(policy_config, task::task_options(c));
  load_base(policy, c);
  if (!policy.is_native()) {
    SPOTLIGHT_LOG(info) << "TorchScript model " << c.get_string("model.path") << ": "
                        << policy.trainable_parameters().size() << " of "
                        << policy.named_parameters().size() << " parameter tensors trained";
  }
  const auto reference = make_reference(options, policy_config, c, policy, group.get());
  auto reward = make_reward(c, policy, hooks);
  const ExplorationOptions exploration = exploration_options_of(options);
  auto seeds = make_seed_source(options, exploration, policy, *reward, hooks, leader, stop);
  if (leader) {
    hooks.prepare(options, policy);
    seeds = hooks.wrap_seeds(std::move(seeds));
  } else {
    hooks.prepare_rank(options, rank);
  }
  GrpoTrainer trainer(options, policy, *reward, std::move(seeds), reference.get());
  trainer.set_group(group.get());
  if (leader) trainer.set_observer(hooks.observer());
  if (const auto next = trainer.resume(); next > 0) {
    SPOTLIGHT_LOG(info) << "resumed from checkpoint: next iteration " << next;
  }
  if (leader) hooks.started(trainer.next_iteration());
  TrainTally tally;
  const auto on_iteration = [&](const IterationReport& r) {
    if (!leader) {  // this rank's share: its metrics and one line
      hooks.rank_observed(r);
      SPOTLIGHT_LOG(info) << std::fixed << std::setprecision(3) << "rank " << rank << " iter "
                          << r.iteration + 1 << "/" << options.iterations << " | "
                          << r.iteration_seconds << " s (rollout " << r.rollout_seconds
                          << ", train " << r.train_seconds << ", all-reduce " << r.allreduce_seconds
                          << " s, " << r.allreduce_bytes << " bytes)";
      return;
    }
    hooks.observed(r);
    if (r.iteration < 0) {
      tally.first_validation = r.validation;
      if (r.validation) SPOTLIGHT_LOG(info) << "base model: " << format_validation(*r.validation);
      return;
    }
    tally.add(r);
    hooks.iteration_done(r, tally.explore_seconds);
    SPOTLIGHT_LOG(info) << iteration_line(r, options.iterations);
  };
  bool finished = false;
  try {
    finished = trainer.run(on_iteration, stop);
  } catch (const std::exception& e) {
    if (const auto code = hooks.failed(e, trainer.next_iteration())) return *code;
    throw;
  }
  if (!finished) {
    SPOTLIGHT_LOG(info) << "stopped: iterations 0.." << trainer.next_iteration() - 1
                        << " are checkpointed; a restart resumes at iteration "
                        << trainer.next_iteration();
  }
  if (!leader) return 0;  // rank 0 writes the run's summary
  Json summary = tally.summary(options);
  hooks.summarize(summary);
  durable::write_file(options.run_dir / "summary.json", summary.dump(2) + "\n");
  hooks.finished(options.run_dir);
  log_done(tally);
  return 0;
}

int run_train(const config::Config& c, TrainHooks& hooks) {
  // First, before any thread exists; a signal that arrives while starting is kept.
  signals::StopSignals signals;
  std::stop_source stop;      // asks the trainer to stop
  std::stop_source finished;  // run_train returned, whatever the reason
  std::promise<int> result;
  auto done = result.get_future();
  std::jthread worker([&] {
    try {
      result.set_value(run_train(c, stop.get_token(), hooks));
    } catch (...) {
      result.set_exception(std::current_exception());
    }
    finished.request_stop();
  });
  if (const auto signo = signals.wait(finished.get_token())) {
    const auto grace = std::chrono::duration<double>(c.get_double("trainer.grace_seconds"));
    SPOTLIGHT_LOG(info) << "received " << signals::signal_name(*signo)
                        << ": abandoning the iteration in progress, exiting within "
                        << grace.count() << " s";
    stop.request_stop();
    if (done.wait_for(grace) != std::future_status::ready) {
      SPOTLIGHT_LOG(error) << "did not stop within trainer.grace_seconds (" << grace.count()
                           << " s); exiting with code " << service::kExitGraceExceeded
                           << " (the newest complete checkpoint is intact)";
      std::_Exit(service::kExitGraceExceeded);
    }
  }
  worker.join();
  return done.get();
}

int run_eval(const config::Config& c, TrainHooks& hooks) {
  policy::check_device(c);
  apply_threads(c);
  policy::Policy policy(policy_options(c), task::task_options(c));
  load_base(policy, c);
  auto reward = make_reward(c, policy, hooks);
  GrpoOptions g = grpo_options(c);
  g.run_dir.clear();
  GrpoTrainer evaluator(g, policy, *reward, make_random_seed_source({}));
  const auto v = evaluator.validate();
  std::cout << format_validation(v) << std::endl;
  return 0;
}

int run_validate(const config::Config& c, TrainHooks& hooks) {
  policy::check_device(c);
  apply_threads(c);
  policy::Policy policy(policy_options(c), task::task_options(c));
  auto reward = reward::make_task_reward(policy.task_options());
  const GrpoOptions options = grpo_options(c);
  GrpoTrainer evaluator(options, policy, *reward, make_random_seed_source({}));
  hooks.validating(options, policy);
  const auto start = std::chrono::steady_clock::now();
  const int scored = evaluator.validate_deferred([&](int64_t version, const ValidationReport& v) {
    IterationReport r;
    r.iteration = version - 1;
    r.validation = v;
    hooks.validated(r);
  });
  SPOTLIGHT_LOG(info)
      << "validated " << scored << " saved weights in " << std::fixed << std::setprecision(1)
      << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
      << " s into " << (fs::path(c.get_string("run.dir")) / "validation.jsonl");
  hooks.finished(c.get_string("run.dir"));
  return 0;
}

int run_bench(const config::Config& c) {
  policy::check_device(c);
  if (config::get_choice(c, "model.kind", run::kModelKinds) != run::ModelKind::kNative) {
    throw config::ConfigError("model.kind",
                              "config: bench measures the built-in MMDiT (model.kind native), not "
                              "model.kind " +
                                  c.get_string("model.kind"));
  }
  apply_threads(c);
  const std::string json = to_json(run_benchmark(bench_options(c)));
  std::cout << json << std::endl;
  if (const fs::path out = c.get_string("bench.output"); !out.empty()) {
    if (out.has_parent_path()) fs::create_directories(out.parent_path());
    durable::write_file(out, json + "\n");
  }
  return 0;
}

int run_subcommand(const std::string& subcommand, const config::Config& c, TrainHooks& hooks) {
  if (subcommand == "pretrain") return run_pretrain(c);
  if (subcommand == "train") return run_train(c, hooks);
  if (subcommand == "eval") return run_eval(c, hooks);
  if (subcommand == "validate") return run_validate(c, hooks);
  if (subcommand == "bench") return run_bench(c);
  std::cerr << "usage: spotlight-trainer pretrain|train|eval|validate|bench [--config FILE] [--set "
               "key=value]...\n";
  return 2;
}

}  // namespace spotlight::trainer
