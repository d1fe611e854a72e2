#include "services/explorer/explorer.hpp"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <span>
#include <stdexcept>
#include <thread>
#include <utility>

#include <torch/torch.h>

#include "common/clock/stopwatch.hpp"
#include "common/clock/unix_time.hpp"
#include "common/log/log.hpp"
#include "common/outage/failure.hpp"
#include "common/policy/policy.hpp"
#include "common/queue/errors.hpp"
#include "common/rollout/trajectory.hpp"
#include "common/run/schedule.hpp"
#include "common/run/task_checks.hpp"
#include "common/run/task_key_source.hpp"
#include "common/sampler/stepper.hpp"
#include "common/store/errors.hpp"
#include "common/wire/error.hpp"

namespace spotlight::explorer {
namespace {

// How often the leases are kept alive while a prefetched version is being loaded.
constexpr std::chrono::milliseconds kPinPoll{100};

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Explorer::Explorer(ExplorerOptions options, ExplorerParts parts)
    : options_((options.validate(), std::move(options))),
      parts_(parts),
      state_(parts.kv, run::RunKeys(options_.run_id)),
      metrics_(parts.registry),
      weights_(parts.weights, parts.policy, metrics_, options_.weights_retry_interval),
      inflight_(state_),
      // A user's model (not native) may not output RGB images: it keeps none.
      explored_images_(parts.kv, options_.run_id,
                       parts.policy.is_native() ? options_.sample_images_every : 0,
                       metrics_.explored_images, metrics_.explored_image_errors),
      redis_("redis", &parts.registry,
             outage::BackoffOptions{options_.min_backoff, options_.max_backoff}) {
  limits_ = options_.limits;
  limits_.embedded_prompts = parts_.policy.is_native();  // else a prompt file's free text
}

ExitReason Explorer::run(std::stop_token stop) {
  stop_ = stop;
  stop_requested_ns_ = 0;
  std::stop_callback on_stop(stop, [this] { stop_requested_ns_ = steady_ns(); });
  const auto now = Clock::now();
  next_heartbeat_ = next_finish_poll_ = next_reclaim_ = now;
  backoff_ = std::chrono::milliseconds(0);
  log::info("explorer {} started (run {}, batch {}, max staleness {})", options_.id,
            options_.run_id, options_.batch, options_.max_staleness);

  while (!stopping()) {
    try {
      heartbeat_if_due();
      if (run_finished_if_due()) {
        log::info("run finished (trainer_iteration >= {}): explorer {} exits", options_.iterations,
                  options_.id);
        return ExitReason::kRunFinished;
      }
      if (!have_task_key()) {
        pause(options_.weights_retry_interval);
        continue;
      }
      auto leases = next_leases();
      redis_.succeeded();  // logs the end of an outage, if there was one
      if (!leases.empty()) process(std::move(leases));
      backoff_ = std::chrono::milliseconds(0);
    } catch (const std::exception& e) {
      switch (outage::classify(e)) {
        case outage::Failure::kAccessDenied:
          throw;  // wrong credentials or permissions: retrying cannot help
        case outage::Failure::kUnavailable:
          metrics_.redis_errors.inc();
          pause(redis_.failed(e));  // one line per change of state, not per attempt
          break;
        case outage::Failure::kOther:
          backoff(e, "error");
          break;
      }
    }
  }
  log::info("explorer {} stopped", options_.id);
  return ExitReason::kStopped;
}

void Explorer::heartbeat_if_due() {
  const auto now = Clock::now();
  if (now < next_heartbeat_) return;
  next_heartbeat_ = now + options_.heartbeat_interval;
  state_.put_heartbeat({.explorer_id = options_.id,
                        .unix_ms = clock::unix_ms(),
                        .tasks_in_flight = leases_in_hand_,
                        .samples_per_second = metrics_.samples_per_second.value()});
  redis_.succeeded();  // the first call that gets through ends an outage, whichever it is
}

bool Explorer::run_finished_if_due() {
  const auto now = Clock::now();
  if (now < next_finish_poll_) return false;
  next_finish_poll_ = now + options_.finish_poll_interval;
  const auto progress = state_.trainer_progress();
  // Logged before the explorer exits: a run that finished during an outage is only learnt from
  // Redis, so an explorer that saw Redis lost always says it was restored.
  redis_.succeeded();
  return progress && (progress->finished || progress->iteration >= options_.iterations);
}

std::vector<queue::Lease> Explorer::next_leases() {
  std::vector<queue::Lease> leases;
  const auto now = Clock::now();
  if (now >= next_reclaim_) {
    leases = parts_.queue.reclaim(options_.id, options_.lease_timeout, options_.batch);
    next_reclaim_ = now + options_.reclaim_interval;
  }
  if (static_cast<int>(leases.size()) < options_.batch) {
    try {
      auto more = parts_.queue.lease(
          options_.id, options_.batch - static_cast<int>(leases.size()),
          leases.empty() ? options_.block_timeout : std::chrono::milliseconds(0));
      for (auto& lease : more)
        leases.push_back(std::move(lease));
    } catch (const queue::QueueError&) {
      if (leases.empty()) throw;
      // Work on the reclaimed leases; the next round notices the problem again.
    }
  }
  metrics_.tasks_leased.inc(static_cast<double>(leases.size()));
  held_since_ = Clock::now();
  return leases;
}

bool Explorer::have_task_key() {
  if (task_key_) return true;
  const auto now = Clock::now();
  if (now < next_key_lookup_) return false;
  next_key_lookup_ = now + options_.weights_retry_interval;
  task_key_ = parts_.task_key ? parts_.task_key() : run::shared_task_key(parts_.kv);
  if (task_key_) {
    log::info("explorer {} verifies tasks with key {}", options_.id, task_key_->id());
  } else if (!said_waiting_for_key_) {
    said_waiting_for_key_ = true;
    log::info(
        "waiting for the run's task key ({} is unset and the planner has not stored a run "
        "key yet): leasing nothing until then",
        run::kTaskKeyEnvVar);
  }
  return task_key_.has_value();
}

void Explorer::refuse(const queue::Lease& lease, std::string_view reason, const std::string& why,
                      bool retry) {
  const std::string error =
      "seed task '" + lease.task_id + "' refused (" + std::string(reason) + "): " + why;
  metrics_.malformed_tasks.inc();
  metrics_.refused(reason).inc();
  log::warn("{} (delivery {})", error, lease.delivery_count);
  if (retry) {
    fail(lease, error);
    return;
  }
  metrics_.tasks_failed.inc();
  try {
    if (parts_.queue.reject(lease, error) == queue::FailOutcome::kDeadLettered) {
      log::warn("task '{}' dead-lettered: {}", lease.task_id, error);
    }
  } catch (const queue::QueueUnavailable& e) {
    metrics_.redis_errors.inc();
    redis_.failed(e);  // one line per outage; the task's lease expires
    log::debug("could not reject task '{}' (it will expire): {}", lease.task_id, e.what());
  }
}

std::optional<Explorer::Held> Explorer::admit(queue::Lease lease) {
  wire::SeedTask task;
  try {
    task = wire::SeedTask::decode(lease.payload);
  } catch (const wire::WireError& e) {
    refuse(lease, "malformed", e.what(), /*retry=*/true);
    return std::nullopt;
  }
  switch (const run::TaskAuth auth = run::verify(task, *task_key_)) {
    case run::TaskAuth::kOk:
      break;
    case run::TaskAuth::kOtherKey:
      // Maybe this explorer's key is the wrong one: another explorer may run it.
      refuse(lease, run::to_string(auth),
             "signed with key " + task.key_id + ", this explorer holds key " + task_key_->id() +
                 " (is " + run::kTaskKeyEnvVar + " the same for the planner and the explorers?)",
             /*retry=*/true);
      return std::nullopt;
    case run::TaskAuth::kUnsigned:
    case run::TaskAuth::kBadSignature:
      // Not from the run's planner: never run it.
      refuse(lease, run::to_string(auth),
             auth == run::TaskAuth::kUnsigned
                 ? "not signed by the run's planner"
                 : "its signature does not match its fields under key " + task_key_->id(),
             /*retry=*/false);
      return std::nullopt;
  }
  if (const auto problem = run::task_problem(task, lease.task_id, limits_)) {
    refuse(lease, "out_of_limits", *problem, /*retry=*/true);
    return std::nullopt;
  }
  // The embedded task's prompts parse into their structure; a prompt file's are free text, which
  // the policy must hold embeddings for.
  std::optional<task::Prompt> prompt;
  if (parts_.policy.is_native()) {
    prompt = task::parse_prompt(task.prompt_text);
  } else {
    prompt = task::free_text_prompt(task.prompt_text);
  }
  if (!prompt || !parts_.policy.accepts(*prompt)) {
    refuse(lease, "out_of_limits",
           "field 'prompt_text': '" + task.prompt_text.substr(0, 200) +
               "' is not a prompt of the task",
           /*retry=*/true);
    return std::nullopt;
  }
  Held held;
  held.lease = std::move(lease);
  held.task = std::move(task);
  held.prompt = std::move(*prompt);
  return held;
}

void Explorer::process(std::vector<queue::Lease> leases) {
  std::vector<Held> held;
  for (auto& lease : leases) {
    if (auto h = admit(std::move(lease))) held.push_back(std::move(*h));
  }
  if (held.empty()) return;
  leases_in_hand_ = static_cast<std::int64_t>(held.size());
  struct InHand {
    std::int64_t& count;
    ~InHand() { count = 0; }
  } in_hand{leases_in_hand_};
  // The weights stay as loaded for the whole batch: a prefetched version waits for the next one.
  // A load the prefetcher has begun finishes first; the leases stay alive meanwhile.
  auto pinned = weights_.try_pin(kPinPoll);
  while (!pinned.owns_lock()) {
    keep_alive(held);
    pinned = weights_.try_pin(kPinPoll);
  }
  try {
    std::int64_t need = held.front().task.weights_version - staleness_bound(held.front().task);
    for (const auto& h : held)
      need = std::max(need, h.task.weights_version - staleness_bound(h.task));
    fetch_commits(held);
    if (const auto committed = committed_version(held, need)) weights_.load_exact(*committed);
    const std::optional<std::int64_t> loaded = weights_.ensure(need);
    if (!loaded || *loaded < need) {
      // Serve what the loaded version can, give the rest back until their weights exist.
      std::size_t waiting = 0;
      for (auto& h : held) {
        if (!loaded || *loaded < h.task.weights_version - staleness_bound(h.task)) {
          release(h, "weights not available");
          ++waiting;
        }
      }
      const auto level = need != last_missing_logged_ ? log::Level::kInfo : log::Level::kDebug;
      last_missing_logged_ = need;
      if (log::enabled(level)) {
        log::write(
            level,
            log::format("{} task(s) need weights version >= {} (loaded: {}): released for now",
                        waiting, need, loaded ? std::to_string(*loaded) : "none"));
      }
      std::erase_if(held, [](const Held& h) { return h.settled; });
      if (held.empty()) {
        pinned.unlock();  // a version the prefetcher brings meanwhile loads during the pause
        pause(options_.weights_retry_interval);
        return;
      }
    }
    if (held.front().task.iteration != last_iteration_logged_) {
      last_iteration_logged_ = held.front().task.iteration;
      log::info("exploring iteration {} with weights version {}", last_iteration_logged_, *loaded);
    }
    check_commits(held, *loaded);
    // Tasks of one step count and resume step are sampled together, in lease order.
    std::stable_sort(held.begin(), held.end(), [](const Held& a, const Held& b) {
      return std::pair(a.task.sampler_steps, a.resume_step()) <
             std::pair(b.task.sampler_steps, b.resume_step());
    });
    const std::size_t chunk =
        static_cast<std::size_t>(options_.chunk > 0 ? options_.chunk : options_.batch);
    const std::span<Held> all(held);
    for (std::size_t begin = 0; begin < held.size();) {
      if (stopping()) {
        release_all(all.subspan(begin), "stopping");
        return;
      }
      if (begin > 0) {
        keep_alive(all.subspan(begin));  // while the batch lasts
      }
      std::size_t end = begin;
      while (end < held.size() && end - begin < chunk &&
             held[end].task.sampler_steps == held[begin].task.sampler_steps &&
             held[end].resume_step() == held[begin].resume_step()) {
        ++end;
      }
      sample_chunk(all.subspan(begin, end - begin), *loaded);
      begin = end;
    }
  } catch (...) {
    // Whatever is not settled goes back to the queue (or expires if Redis is away).
    release_all(held, "error");
    throw;
  }
}

void Explorer::fetch_commits(std::span<Held> held) {
  for (auto& h : held) {
    try {
      h.resume = inflight_.get(h.lease.task_id);
      h.had_commit = h.resume.has_value();
    } catch (const run::MalformedRunState& e) {
      h.had_commit = true;
      h.resume.reset();
      metrics_.discarded_commits.inc();
      log::warn("task '{}': in-flight commit does not decode ({}); starting from step 0",
                h.lease.task_id, e.what());
    }
  }
}

std::optional<std::int64_t> Explorer::committed_version(std::span<const Held> held,
                                                        std::int64_t need) {
  std::map<std::int64_t, int> votes;
  for (const auto& h : held) {
    if (h.resume && h.resume->weights_version >= need) ++votes[h.resume->weights_version];
  }
  std::optional<std::int64_t> best;
  int most = 0;
  for (const auto& [version, n] : votes) {
    if (n >= most) {  // ties: the newer version
      most = n;
      best = version;
    }
  }
  return best;
}

void Explorer::check_commits(std::span<Held> held, std::int64_t version) {
  const std::vector<std::int64_t> shape = parts_.policy.sample_shape();
  for (auto& h : held) {
    if (!h.resume) continue;
    const wire::InflightCommit& commit = *h.resume;
    std::string why;
    if (commit.task_id != h.lease.task_id || commit.seed != h.task.seed) {
      why = "it belongs to another task or seed";
    } else if (commit.weights_version != version) {
      why = "it used weights version " + std::to_string(commit.weights_version) +
            ", this explorer holds " + std::to_string(version);
    } else if (commit.latent_shape != shape) {
      why = "its latent shape does not fit the model";
    } else if (commit.step_index < 1 || commit.step_index >= h.task.sampler_steps) {
      why = "step " + std::to_string(commit.step_index) + " is not in [1, " +
            std::to_string(h.task.sampler_steps) + ")";
    } else if (h.keeps_trajectory() && commit.step_index > h.task.trajectory_begin) {
      why = "the task keeps its trajectory from step " + std::to_string(h.task.trajectory_begin) +
            ", the commit is at step " + std::to_string(commit.step_index);
    }
    if (!why.empty()) {
      metrics_.discarded_commits.inc();
      log::info("task '{}': in-flight commit not usable ({}); starting from step 0",
                h.lease.task_id, why);
      h.resume.reset();
    }
  }
}

// A chunk's tasks still ours, as sample_chunk()'s phases fill it.
struct Explorer::ChunkWork {
  std::vector<Held*> active;
  std::vector<task::Prompt> prompts;
  std::vector<uint64_t> seeds;
  sampler::SamplerOptions sampler;
  std::vector<std::int64_t> sample_shape;
  // Kept trajectories: every latent from the resume step on, and every step's log-probability.
  bool keep = false;
  std::vector<at::Tensor> kept_latents, kept_log_probs;
  std::int64_t kept_from = 0;  // grid index of kept_latents[0]
  // The row in kept_latents / kept_log_probs of each entry of `active` (the identity until
  // drop_non_finite removes a sample from the chunk; the kept tensors keep every row).
  std::vector<std::int64_t> rows;
  std::vector<task::Image> images;
  std::vector<reward::Scored> scores;
};

void Explorer::sample_chunk(std::span<Held> chunk, std::int64_t version) {
  ChunkWork work = chunk_work(chunk);
  if (work.active.empty()) return;
  clock::Stopwatch watch;
  const bool sampled = sample(work, chunk, version);
  const double sample_seconds = watch.lap();
  metrics_.chunk_sample_seconds.inc(sample_seconds);
  if (!sampled) return;
  drop_non_finite(work, version);
  if (work.active.empty()) return;
  const bool scored = score(work, version);
  const double score_seconds = watch.lap();
  metrics_.chunk_score_seconds.inc(score_seconds);
  if (!scored) return;
  record_results(work, version, sample_seconds + score_seconds);
  const double record_seconds = watch.lap();
  metrics_.chunk_record_seconds.inc(record_seconds);
  log::debug(
      "completed {} task(s) with weights version {} in {:.3f} s (sample {:.3f}, score {:.3f}, "
      "record {:.3f})",
      work.active.size(), version, watch.elapsed(), sample_seconds, score_seconds, record_seconds);
}

Explorer::ChunkWork Explorer::chunk_work(std::span<Held> chunk) {
  ChunkWork work;
  for (auto& h : chunk) {
    if (h.settled) continue;  // its lease was lost
    work.active.push_back(&h);
    work.prompts.push_back(h.prompt);
    work.seeds.push_back(h.task.seed);
  }
  if (work.active.empty()) return work;
  work.sampler = options_.sampler;
  work.sampler.steps = static_cast<int>(work.active.front()->task.sampler_steps);
  work.sampler.sde = true;
  work.sampler.keep_trajectory = false;
  work.sample_shape = parts_.policy.sample_shape();
  for (const Held* h : work.active)
    work.keep = work.keep || h->keeps_trajectory();
  if (work.keep &&
      (chunk_sampler_ || parts_.trajectories == nullptr || work.sampler.noise_level <= 0)) {
    for (const Held* h : work.active) {
      if (h->keeps_trajectory()) metrics_.trajectories_unavailable.inc();
    }
    log::warn("{} cannot keep trajectories ({}): the trainer samples those rollouts itself",
              options_.id,
              chunk_sampler_                   ? "SP sampling"
              : parts_.trajectories == nullptr ? "no trajectory store"
                                               : "no SDE noise, no log-probabilities");
    work.keep = false;
  }
  return work;
}

bool Explorer::sample(ChunkWork& work, std::span<Held> chunk, std::int64_t version) {
  const auto& active = work.active;
  const auto& sampler = work.sampler;
  const auto& sample_shape = work.sample_shape;
  const auto batch = static_cast<std::int64_t>(active.size());
  try {
    if (chunk_sampler_) {
      // An SP group samples the whole chunk in its rank processes: there is no step boundary here,
      // so a notice during it commits nothing, and commits made elsewhere are not resumed.
      for (Held* h : active) {
        if (!h->resume) continue;
        metrics_.discarded_commits.inc();
        h->resume.reset();
      }
      work.images = chunk_sampler_(version, work.prompts, work.seeds, sampler);
      metrics_.sample_steps.inc(static_cast<double>(batch * sampler.steps));
      add_run_counter(&run::RunState::add_sample_steps, batch * sampler.steps);
      return true;
    }
    std::optional<sampler::ResumePoint> resume;
    if (active.front()->resume) {
      // Every task of the chunk has a usable commit at the same step (process() groups them).
      std::vector<float> values;
      for (Held* h : active)
        values.insert(values.end(), h->resume->latent.begin(), h->resume->latent.end());
      auto latent = torch::from_blob(values.data(),
                                     {batch, sample_shape[0], sample_shape[1], sample_shape[2]},
                                     torch::kFloat)
                        .clone();
      resume = sampler::ResumePoint{latent, static_cast<int>(active.front()->resume_step())};
    }
    sampler::Stepper stepper = parts_.policy.stepper(work.prompts, work.seeds, sampler, resume);
    if (resume) {
      metrics_.resumes.inc(static_cast<double>(batch));
      add_run_counter(&run::RunState::add_resumed_steps, batch * resume->step);
      log::info("resuming {} committed task(s) at step {} of {}", batch, resume->step,
                sampler.steps);
    }
    work.kept_from = stepper.step();
    if (work.keep) work.kept_latents.push_back(stepper.latent());
    while (!stepper.done()) {
      if (stopping()) {
        auto cpu = stepper.latent().detach().to(torch::kCPU, torch::kFloat).contiguous();
        const float* data = cpu.data_ptr<float>();
        commit_and_release(active, stepper.step(), version,
                           std::vector<float>(data, data + cpu.numel()), sample_shape);
        return false;
      }
      auto log_prob = stepper.advance();
      if (work.keep) {
        work.kept_latents.push_back(stepper.latent());
        work.kept_log_probs.push_back(log_prob);
      }
      metrics_.sample_steps.inc(static_cast<double>(batch));
      add_run_counter(&run::RunState::add_sample_steps, batch);
      // A chunk may take longer than the reaper's dead_after or the lease timeout: stay alive.
      keep_alive(chunk);
    }
    work.images = parts_.policy.reward_inputs(stepper.latent());
    return true;
  } catch (const std::exception& e) {
    log::error("sampling {} task(s) failed: {}", active.size(), e.what());
    for (Held* h : active)
      fail_with_version(*h, std::string("sampling: ") + e.what(), version);
    return false;
  }
}

void Explorer::drop_non_finite(ChunkWork& work, std::int64_t version) {
  // Pixels that are not finite (a diverged model) are not scored: the reward service would refuse
  // them, and an in-process reward would give them an arbitrary score.
  if (work.rows.empty()) {
    for (std::size_t i = 0; i < work.images.size(); ++i)
      work.rows.push_back(static_cast<std::int64_t>(i));
  }
  for (std::size_t i = work.images.size(); i-- > 0;) {
    const auto& rgb = work.images[i].rgb;
    if (std::all_of(rgb.begin(), rgb.end(), [](float v) { return std::isfinite(v); })) continue;
    metrics_.non_finite_samples.inc();
    fail_with_version(*work.active[i], "sampling produced pixels that are not finite (NaN or Inf)",
                      version);
    work.active.erase(work.active.begin() + static_cast<std::ptrdiff_t>(i));
    work.prompts.erase(work.prompts.begin() + static_cast<std::ptrdiff_t>(i));
    work.images.erase(work.images.begin() + static_cast<std::ptrdiff_t>(i));
    work.rows.erase(work.rows.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

bool Explorer::score(ChunkWork& work, std::int64_t version) {
  try {
    work.scores = parts_.reward.score(work.prompts, work.images);
    if (work.scores.size() != work.active.size()) {
      throw std::runtime_error("reward " + parts_.reward.name() + " returned " +
                               std::to_string(work.scores.size()) + " scores for " +
                               std::to_string(work.active.size()) + " images");
    }
  } catch (const std::invalid_argument& e) {  // the input was bad: retrying will not help
    metrics_.reward_errors.inc();
    for (Held* h : work.active)
      fail_with_version(*h, std::string("reward: ") + e.what(), version);
    return false;
  } catch (const std::exception&) {
    metrics_.reward_errors.inc();
    throw;  // process() releases the rest of the batch; run() backs off
  }
  return true;
}

void Explorer::record_results(ChunkWork& work, std::int64_t version, double seconds) {
  const auto& active = work.active;
  // [B, steps + 1 - kept_from, C, H, W] and [B, steps - kept_from]; a resumed chunk starts at its
  // resume step, which is at most the trajectory's first step (check_commits).
  at::Tensor trajectory_latents, trajectory_log_probs;
  if (work.keep) {
    trajectory_latents = torch::stack(work.kept_latents, 1);
    trajectory_log_probs = torch::stack(work.kept_log_probs, 1);
  }
  const double per_sample = seconds / static_cast<double>(active.size());
  const reward::RewardRange range = parts_.reward.range();  // declared with these scores
  metrics_.samples_per_second.set(seconds > 0 ? static_cast<double>(active.size()) / seconds : 0.0);
  for (std::size_t i = 0; i < active.size(); ++i) {
    metrics_.sample_seconds.observe(per_sample);
    const auto& task = active[i]->task;
    wire::SeedResult result;
    result.task_id = active[i]->lease.task_id;
    result.run_id = task.run_id;
    result.iteration = task.iteration;
    result.prompt_index = task.prompt_index;
    result.seed = task.seed;
    result.weights_version_used = version;
    if (const auto fault = reward::reward_fault(work.scores[i].reward, range)) {
      reward_fault(*active[i], *fault);
      continue;
    }
    metrics_.staleness_versions.observe(static_cast<double>(task.iteration - version));
    result.reward = work.scores[i].reward;
    result.correct = work.scores[i].correct;
    result.explorer_id = options_.id;
    result.sample_seconds = per_sample;
    // The same check the trainer makes before using a result: never record one it would refuse.
    if (const auto problem =
            run::result_problem(result, run::expected_result(active[i]->lease.task_id, task))) {
      metrics_.invalid_results.inc();
      log::warn("result of task '{}' not recorded: {}", active[i]->lease.task_id, *problem);
      fail_with_version(*active[i], "result not recorded: " + *problem, version);
      continue;
    }
    // Before the result: the trainer reads both.
    explored_images_.maybe_record(task, work.images[i]);
    std::string trajectory;
    if (work.keep && active[i]->keeps_trajectory()) {
      const auto shift = [&](std::int64_t step) { return step - work.kept_from; };
      rollout::TrajectoryOrigin origin;
      origin.task_id = active[i]->lease.task_id;
      origin.run_id = task.run_id;
      origin.iteration = task.iteration;
      origin.prompt_index = task.prompt_index;
      origin.seed = task.seed;
      origin.weights_version = version;
      origin.weights_checksum = weights_.loaded_checksum();
      origin.explorer_id = options_.id;
      // Shifted so that index 0 is kept_from: the window in the kept tensors' own indices.
      const rollout::StepWindow kept{static_cast<int>(shift(task.trajectory_begin)),
                                     static_cast<int>(shift(task.trajectory_end))};
      // Its own row: after a dropped sample, entry i of `active` is no longer row i.
      const std::int64_t row = work.rows.empty() ? static_cast<std::int64_t>(i) : work.rows[i];
      auto message = rollout::make_trajectory(origin, work.sampler, trajectory_latents[row],
                                              trajectory_log_probs[row], kept);
      message.step_begin = task.trajectory_begin;
      message.step_end = task.trajectory_end;
      trajectory = message.encode();
    }
    complete(*active[i], result.encode(), trajectory);
  }
}

void Explorer::commit_and_release(const std::vector<Held*>& active, std::int64_t step,
                                  std::int64_t version, const std::vector<float>& latents,
                                  const std::vector<std::int64_t>& sample_shape) {
  const std::size_t per = latents.size() / std::max<std::size_t>(1, active.size());
  std::size_t committed = 0;
  // Step 0 holds nothing a seed does not already give.
  if (options_.commit_inflight && step > 0) {
    for (std::size_t i = 0; i < active.size(); ++i) {
      Held& h = *active[i];
      wire::InflightCommit commit;
      commit.task_id = h.lease.task_id;
      commit.seed = h.task.seed;
      commit.step_index = step;
      commit.weights_version = version;
      commit.latent.assign(latents.begin() + static_cast<std::ptrdiff_t>(i * per),
                           latents.begin() + static_cast<std::ptrdiff_t>((i + 1) * per));
      commit.latent_shape = sample_shape;
      try {
        inflight_.put(commit);  // before the release: the next holder must find it
        h.had_commit = true;
        metrics_.inflight_commits.inc();
        ++committed;
      } catch (const std::exception& e) {
        if (outage::classify(e) == outage::Failure::kUnavailable) metrics_.redis_errors.inc();
        log::warn("could not commit task '{}' at step {} (it restarts from step 0): {}",
                  h.lease.task_id, step, e.what());
      }
    }
  }
  log::info("stopping at step {} of {}: {} of {} in-flight task(s) committed", step,
            active.front()->task.sampler_steps, committed, active.size());
  for (Held* h : active)
    release(*h, "stopping");
}

void Explorer::add_run_counter(void (run::RunState::*add)(std::int64_t), std::int64_t delta) {
  if (delta <= 0) return;
  try {
    (state_.*add)(delta);
  } catch (const store::StoreUnavailable& e) {
    metrics_.redis_errors.inc();  // accounting only: never stops sampling
    redis_.failed(e);
  }
}

void Explorer::keep_alive(std::span<Held> held) {
  extend_if_due(held);
  try {
    heartbeat_if_due();
  } catch (const store::StoreUnavailable& e) {
    metrics_.redis_errors.inc();
    redis_.failed(e);
  }
}

void Explorer::extend_if_due(std::span<Held> held) {
  const auto now = Clock::now();
  if (now - held_since_ < options_.lease_timeout / 3) return;
  held_since_ = now;
  for (auto& h : held) {
    if (h.settled) continue;
    try {
      if (!parts_.queue.extend(h.lease)) {
        log::warn("lease of task '{}' was lost; leaving it to its new holder", h.lease.task_id);
        h.settled = true;
      }
    } catch (const queue::QueueUnavailable& e) {
      metrics_.redis_errors.inc();
      redis_.failed(e);
    }
  }
}

std::int64_t Explorer::staleness_bound(const wire::SeedTask& task) const {
  return task.max_staleness >= 0 ? std::min(task.max_staleness, options_.max_staleness)
                                 : options_.max_staleness;
}

void Explorer::complete(Held& held, const std::string& result, const std::string& trajectory) {
  held.settled = true;
  bool trajectory_written = trajectory.empty();
  for (;;) {
    try {
      if (!trajectory_written) {
        parts_.trajectories->put(held.lease.task_id, trajectory);
        trajectory_written = true;
        metrics_.trajectories_kept.inc();
        metrics_.trajectory_bytes.inc(static_cast<double>(trajectory.size()));
      }
      const queue::Completion c = parts_.queue.complete(held.lease, result);
      if (c.recorded) {
        metrics_.tasks_completed.inc();
      } else {
        metrics_.duplicate_results.inc();
        log::debug("task '{}' already had a result (ran twice)", held.lease.task_id);
      }
      if (held.had_commit) {
        try {
          inflight_.erase(held.lease.task_id);
        } catch (const store::StoreUnavailable&) {
          metrics_.redis_errors.inc();  // left behind: harmless, the task is never leased again
        }
      }
      return;
    } catch (const std::exception& e) {
      // Redis unavailable (the queue or the trajectory store): retry. Anything else from the
      // trajectory store: record the result without it (the trainer samples that rollout).
      const bool unavailable = outage::classify(e) == outage::Failure::kUnavailable;
      if (!unavailable) {
        if (trajectory_written) throw;
        log::error("could not keep the trajectory of task '{}': {}", held.lease.task_id, e.what());
        metrics_.trajectories_unavailable.inc();
        trajectory_written = true;
        continue;
      }
      metrics_.redis_errors.inc();
      if (past_grace()) {
        log::error("giving up on the result of task '{}' (grace period over): {}",
                   held.lease.task_id, e.what());
        return;  // the lease expires and the task runs again elsewhere
      }
      pause(redis_.failed(e), /*during_grace=*/true);
    }
  }
}

void Explorer::fail(Held& held, const std::string& error) {
  held.settled = true;
  fail(held.lease, error);
}

void Explorer::fail_with_version(Held& held, const std::string& error, std::int64_t version) {
  constexpr std::int64_t kVersionFailuresLogged = 3;
  constexpr std::size_t kVersionsKept = 8;
  const std::int64_t n = ++failures_by_version_[version];
  while (failures_by_version_.size() > kVersionsKept)
    failures_by_version_.erase(failures_by_version_.begin());
  // At the threshold, then at every doubling of it (3, 6, 12, ...): not one line per failure.
  const std::int64_t multiple = n / kVersionFailuresLogged;
  const bool log_now =
      n % kVersionFailuresLogged == 0 && multiple > 0 && (multiple & (multiple - 1)) == 0;
  if (log_now) {
    log::error(
        "weights version {}: {} task failures with it on this explorer (last: {}); the version "
        "itself may be bad (weights that are not finite, another model's blob)",
        version, n, error);
  }
  fail(held, error);
}

void Explorer::fail(const queue::Lease& lease, const std::string& error) {
  metrics_.tasks_failed.inc();
  try {
    switch (parts_.queue.fail(lease, error)) {
      case queue::FailOutcome::kDeadLettered:
        log::warn("task '{}' dead-lettered after {} deliveries: {}", lease.task_id,
                  lease.delivery_count, error);
        break;
      case queue::FailOutcome::kNotHeld:
        log::debug("task '{}' no longer held; failure ignored", lease.task_id);
        break;
      case queue::FailOutcome::kRetry:
        break;
    }
  } catch (const queue::QueueUnavailable& e) {
    metrics_.redis_errors.inc();
    redis_.failed(e);  // one line per outage; the task's lease expires
    log::debug("could not fail task '{}' (it will expire): {}", lease.task_id, e.what());
  }
}

void Explorer::reward_fault(Held& held, const reward::RewardFault& fault) {
  held.settled = true;
  metrics_.reward_faults(fault.reason).inc();
  metrics_.tasks_failed.inc();
  const std::string error = "reward fault (" + std::string(fault.reason) +
                            "): " + parts_.reward.name() + ": " + fault.message;
  if (const auto held_back = reward_fault_lines_.admit()) {
    log::error("task '{}' dead-lettered: {} ({} more reward faults since the previous line)",
               held.lease.task_id, error, *held_back);
  }
  try {
    parts_.queue.reject(held.lease, error);
  } catch (const queue::QueueUnavailable& e) {
    metrics_.redis_errors.inc();
    redis_.failed(e);  // one line per outage; the task's lease expires
    log::debug("could not reject task '{}' (it will expire): {}", held.lease.task_id, e.what());
  }
}

void Explorer::release_all(std::span<Held> held, const char* why) {
  for (auto& h : held) {
    if (!h.settled) release(h, why);
  }
}

void Explorer::release(Held& held, const char* why) {
  held.settled = true;
  try {
    if (parts_.queue.release(held.lease)) metrics_.tasks_released.inc();
  } catch (const std::exception& e) {
    if (outage::classify(e) == outage::Failure::kUnavailable) {
      metrics_.redis_errors.inc();
      redis_.failed(e);  // one line per outage; the task's lease expires
      log::debug("could not release task '{}' ({}; it will expire): {}", held.lease.task_id, why,
                 e.what());
    } else {
      log::warn("could not release task '{}' ({}; it will expire): {}", held.lease.task_id, why,
                e.what());
    }
  }
}

bool Explorer::past_grace() const {
  const std::int64_t requested = stop_requested_ns_.load();
  if (requested == 0) return false;
  return steady_ns() - requested >
         std::chrono::duration_cast<std::chrono::nanoseconds>(options_.grace_period).count();
}

void Explorer::pause(std::chrono::milliseconds duration, bool during_grace) {
  if (stopping()) {
    if (!during_grace) return;
    const std::int64_t deadline =
        stop_requested_ns_.load() +
        std::chrono::duration_cast<std::chrono::nanoseconds>(options_.grace_period).count();
    const auto left = std::chrono::nanoseconds(std::max<std::int64_t>(0, deadline - steady_ns()));
    std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(left, duration));
    return;
  }
  std::mutex mutex;
  std::condition_variable_any wake;
  std::unique_lock lock(mutex);
  wake.wait_for(lock, stop_, duration, [] { return false; });
}

void Explorer::backoff(const std::exception& e, const char* what, bool during_grace) {
  backoff_ =
      backoff_.count() == 0 ? options_.min_backoff : std::min(backoff_ * 2, options_.max_backoff);
  log::warn("{}: {} (retrying in {} ms)", what, e.what(), backoff_.count());
  pause(backoff_, during_grace);
}

}  // namespace spotlight::explorer
