#include "services/explorer/explorer.hpp"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <span>
#include <stdexcept>
#include <thread>
#include <utility>

#include <torch/torch.h>

#include "common/log/log.hpp"
#include "common/outage/failure.hpp"
#include "common/policy/policy.hpp"
#include "common/queue/errors.hpp"
#include "common/run/schedule.hpp"
#include "common/sampler/stepper.hpp"
#include "common/store/errors.hpp"
#include "common/wire/error.hpp"

namespace spotlight::explorer {
namespace {

// Largest sampler step count a task may ask for (the run schema allows up to 1000).
constexpr std::int64_t kMaxSamplerSteps = 10000;

std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string seen_key(const std::string& id) {
  return "explorer:" + id + ":seen";
}

}  // namespace

Explorer::Explorer(ExplorerOptions options, ExplorerParts parts)
    : options_((options.validate(), std::move(options))),
      parts_(parts),
      keys_(options_.run_id),
      metrics_(parts.registry),
      weights_(parts.weights, parts.policy, metrics_, options_.weights_retry_interval),
      inflight_(parts.kv),
      redis_("redis", &parts.registry,
             outage::BackoffOptions{options_.min_backoff, options_.max_backoff}) {}

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
  const std::string stamp = std::to_string(unix_ms());
  if (!seen_recorded_) {
    parts_.kv.put_if_absent(seen_key(options_.id), stamp);
    seen_recorded_ = true;
  }
  parts_.kv.put(keys_.explorer_heartbeat(options_.id), stamp);
}

bool Explorer::run_finished_if_due() {
  const auto now = Clock::now();
  if (now < next_finish_poll_) return false;
  next_finish_poll_ = now + options_.finish_poll_interval;
  return parts_.kv.counter(keys_.trainer_iteration) >= options_.iterations;
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

std::optional<Explorer::Held> Explorer::admit(queue::Lease lease) {
  const auto reject = [&](const std::string& why) -> std::optional<Held> {
    const std::string error = "seed task '" + lease.task_id + "': " + why;
    metrics_.malformed_tasks.inc();
    log::warn("malformed task (delivery {}): {}", lease.delivery_count, error);
    fail(lease, error);
    return std::nullopt;
  };
  wire::SeedTask task;
  try {
    task = wire::SeedTask::decode(lease.payload);
  } catch (const wire::WireError& e) {
    return reject(e.what());
  }
  if (task.run_id != options_.run_id) {
    return reject("field 'run_id': '" + task.run_id + "' is not this run ('" + options_.run_id +
                  "')");
  }
  if (task.iteration < 0) return reject("field 'iteration': negative");
  if (task.prompt_index < 0) return reject("field 'prompt_index': negative");
  if (task.weights_version < 0) return reject("field 'weights_version': negative");
  if (task.sampler_steps < 1 || task.sampler_steps > kMaxSamplerSteps) {
    return reject("field 'sampler_steps': " + std::to_string(task.sampler_steps) +
                  " is not in [1, " + std::to_string(kMaxSamplerSteps) + "]");
  }
  if (const auto id = run::parse_seed_task_id(lease.task_id);
      id && (id->iteration != task.iteration || id->prompt != task.prompt_index)) {
    return reject("fields 'iteration'/'prompt_index' (" + std::to_string(task.iteration) + "/" +
                  std::to_string(task.prompt_index) + ") disagree with the task id");
  }
  // The embedded task's prompts parse into their structure; a prompt file's are free text, which
  // the policy must hold embeddings for.
  std::optional<task::Prompt> prompt;
  if (parts_.policy.is_native()) {
    prompt = task::parse_prompt(task.prompt_text);
  } else if (!task.prompt_text.empty()) {
    prompt = task::free_text_prompt(task.prompt_text);
  }
  if (!prompt || !parts_.policy.accepts(*prompt)) {
    return reject("field 'prompt_text': '" + task.prompt_text + "' is not a prompt of the task");
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
  try {
    std::int64_t need = held.front().task.weights_version - options_.max_staleness;
    for (const auto& h : held)
      need = std::max(need, h.task.weights_version - options_.max_staleness);
    fetch_commits(held);
    if (const auto committed = committed_version(held, need)) weights_.load_exact(*committed);
    const std::optional<std::int64_t> loaded = weights_.ensure(need);
    if (!loaded || *loaded < need) {
      // Serve what the loaded version can, give the rest back until their weights exist.
      std::size_t waiting = 0;
      for (auto& h : held) {
        if (!loaded || *loaded < h.task.weights_version - options_.max_staleness) {
          release(h, "weights not available");
          ++waiting;
        }
      }
      const auto level = need != last_missing_logged_ ? log::Level::kInfo : log::Level::kDebug;
      last_missing_logged_ = need;
      if (log::enabled(level)) {
        log::write(level,
                   log::detail::format(
                       "{} task(s) need weights version >= {} (loaded: {}): released for now",
                       waiting, need, loaded ? std::to_string(*loaded) : "none"));
      }
      std::erase_if(held, [](const Held& h) { return h.settled; });
      if (held.empty()) {
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
    } catch (const wire::WireError& e) {
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
    }
    if (!why.empty()) {
      metrics_.discarded_commits.inc();
      log::info("task '{}': in-flight commit not usable ({}); starting from step 0",
                h.lease.task_id, why);
      h.resume.reset();
    }
  }
}

void Explorer::sample_chunk(std::span<Held> chunk, std::int64_t version) {
  std::vector<Held*> active;
  std::vector<task::Prompt> prompts;
  std::vector<uint64_t> seeds;
  for (auto& h : chunk) {
    if (h.settled) continue;  // its lease was lost
    active.push_back(&h);
    prompts.push_back(h.prompt);
    seeds.push_back(h.task.seed);
  }
  if (active.empty()) return;
  auto sampler = options_.sampler;
  sampler.steps = static_cast<int>(active.front()->task.sampler_steps);
  sampler.sde = true;
  sampler.keep_trajectory = false;
  const std::vector<std::int64_t> sample_shape = parts_.policy.sample_shape();
  const auto batch = static_cast<std::int64_t>(active.size());

  const auto start = Clock::now();
  std::vector<task::Image> images;
  try {
    if (chunk_sampler_) {
      // An SP group samples the whole chunk in its rank processes: there is no step boundary here,
      // so a notice during it commits nothing, and commits made elsewhere are not resumed.
      for (Held* h : active) {
        if (!h->resume) continue;
        metrics_.discarded_commits.inc();
        h->resume.reset();
      }
      images = chunk_sampler_(version, prompts, seeds, sampler);
      metrics_.sample_steps.inc(static_cast<double>(batch * sampler.steps));
      add_run_counter(kSampleStepsKey, batch * sampler.steps);
    } else {
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
      sampler::Stepper stepper = parts_.policy.stepper(prompts, seeds, sampler, resume);
      if (resume) {
        metrics_.resumes.inc(static_cast<double>(batch));
        add_run_counter(kResumedStepsKey, batch * resume->step);
        log::info("resuming {} committed task(s) at step {} of {}", batch, resume->step,
                  sampler.steps);
      }
      while (!stepper.done()) {
        if (stopping()) {
          auto cpu = stepper.latent().detach().to(torch::kCPU, torch::kFloat).contiguous();
          const float* data = cpu.data_ptr<float>();
          commit_and_release(active, stepper.step(), version,
                             std::vector<float>(data, data + cpu.numel()), sample_shape);
          return;
        }
        stepper.advance();
        metrics_.sample_steps.inc(static_cast<double>(batch));
        add_run_counter(kSampleStepsKey, batch);
        // A chunk may take longer than the reaper's dead_after or the lease timeout: stay alive.
        keep_alive(chunk);
      }
      images = parts_.policy.reward_inputs(stepper.latent());
    }
  } catch (const std::exception& e) {
    log::error("sampling {} task(s) failed: {}", active.size(), e.what());
    for (Held* h : active)
      fail(*h, std::string("sampling: ") + e.what());
    return;
  }
  std::vector<reward::Scored> scores;
  try {
    scores = parts_.reward.score(prompts, images);
    if (scores.size() != active.size()) {
      throw std::runtime_error("reward " + parts_.reward.name() + " returned " +
                               std::to_string(scores.size()) + " scores for " +
                               std::to_string(active.size()) + " images");
    }
  } catch (const std::invalid_argument& e) {  // the input was bad: retrying will not help
    metrics_.reward_errors.inc();
    for (Held* h : active)
      fail(*h, std::string("reward: ") + e.what());
    return;
  } catch (const std::exception&) {
    metrics_.reward_errors.inc();
    throw;  // process() releases the rest of the batch; run() backs off
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double per_sample = seconds / static_cast<double>(active.size());
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
    metrics_.staleness_versions.observe(static_cast<double>(task.iteration - version));
    result.reward = scores[i].reward;
    result.correct = scores[i].correct;
    result.explorer_id = options_.id;
    result.sample_seconds = per_sample;
    complete(*active[i], result.encode());
  }
  log::debug("completed {} task(s) with weights version {} in {} s", active.size(), version,
             seconds);
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
        if (dynamic_cast<const store::StoreUnavailable*>(&e) != nullptr) {
          metrics_.redis_errors.inc();
        }
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

void Explorer::add_run_counter(const char* key, std::int64_t delta) {
  if (delta <= 0) return;
  try {
    parts_.kv.add(key, delta);
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

void Explorer::complete(Held& held, const std::string& result) {
  held.settled = true;
  for (;;) {
    try {
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
    } catch (const queue::QueueUnavailable& e) {
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
