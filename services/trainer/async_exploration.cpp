#include "services/trainer/async_exploration.hpp"

#include <utility>

#include <nlohmann/json.hpp>

#include "common/log/log.hpp"
#include "common/rl/selection.hpp"
#include "common/run/plan_record.hpp"
#include "common/run/schedule.hpp"
#include "common/wire/messages.hpp"

namespace spotlight::trainer {
namespace {

using Clock = std::chrono::steady_clock;

// fn() through `retry` when there is one.
template <class Fn>
auto call(const outage::Retrier* retry, Fn&& fn) -> decltype(fn()) {
  if (retry != nullptr) return (*retry)(std::forward<Fn>(fn));
  return fn();
}

int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

AsyncSeedSource::AsyncSeedSource(AsyncSeedOptions options, queue::LeaseQueue& queue,
                                 store::KeyValueStore* plans, const outage::Retrier* retry)
    : o_(std::move(options)), queue_(queue), plans_(plans), retry_(retry) {}

SeedSelection AsyncSeedSource::select(int64_t iteration, const std::vector<task::Prompt>& prompts) {
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(o_.max_wait);
  const size_t n = prompts.size();
  // How many candidates the planner enqueued: its plan record, once it shows up.
  std::optional<int> planned;
  const auto read_plan = [&] {
    if (!plans_ || planned) return;
    if (const auto text = call(retry_, [&] { return plans_->get(run::plan_key(iteration)); })) {
      if (const auto record = run::parse_plan_record(*text)) {
        planned = record->candidates;
      } else {
        SPOTLIGHT_LOG(warn) << "iteration " << iteration << ": malformed plan record ignored";
        planned = o_.candidates;
      }
    }
  };
  read_plan();
  while (plans_ && !planned && Clock::now() < deadline) {
    // polling interval of a condition wait with a deadline
    if (outage::wait_or_stop(o_.stop, o_.poll)) break;
    read_plan();
  }
  const int candidates = planned.value_or(o_.candidates);
  std::vector<std::vector<std::optional<double>>> found(
      n, std::vector<std::optional<double>>(static_cast<size_t>(candidates)));
  size_t missing = n * static_cast<size_t>(candidates);
  int malformed = 0;
  // Poll the results until all are in or the deadline passes. Each poll reads only the missing.
  while (missing > 0) {
    for (size_t i = 0; i < n; ++i) {
      for (int j = 0; j < candidates; ++j) {
        if (found[i][j]) continue;
        const auto id = run::seed_task_id(iteration, static_cast<int>(i), j);
        const auto bytes = call(retry_, [&] { return queue_.result(id); });
        if (!bytes) continue;
        try {
          found[i][j] = wire::SeedResult::decode(*bytes).reward;
          --missing;
        } catch (const wire::WireError& e) {
          ++malformed;
          SPOTLIGHT_LOG(warn) << "ignoring a malformed result of iteration " << iteration << ": "
                              << e.what();
          found[i][j] = std::nullopt;
        }
      }
    }
    if (missing == 0 || Clock::now() >= deadline) break;
    // polling interval of a condition wait with a deadline
    if (outage::wait_or_stop(o_.stop, o_.poll)) break;
  }

  SeedSelection out;
  double variance_sum = 0;
  for (size_t i = 0; i < n; ++i) {
    std::vector<double> rewards;
    std::vector<uint64_t> seeds;
    for (int j = 0; j < candidates; ++j) {
      if (!found[i][j]) continue;
      rewards.push_back(*found[i][j]);
      seeds.push_back(run::candidate_seed(o_.run_seed, iteration, static_cast<int>(i), j));
    }
    std::vector<uint64_t> chosen;
    if (static_cast<int>(rewards.size()) >= o_.group_size) {
      std::vector<double> chosen_rewards;
      for (size_t index : rl::select_max_variance(rewards, o_.group_size)) {
        chosen.push_back(seeds[index]);
        chosen_rewards.push_back(rewards[index]);
      }
      variance_sum += rl::variance(chosen_rewards);
    } else {
      // Too little explored in time: plain Flow-GRPO seeds for this prompt.
      ++out.fallback_prompts;
      for (int j = 0; j < o_.group_size; ++j) {
        chosen.push_back(run::candidate_seed(o_.run_seed, iteration, static_cast<int>(i), j));
      }
    }
    out.seeds.push_back(std::move(chosen));
    out.candidate_rewards.push_back(std::move(rewards));
    out.candidate_seeds.push_back(std::move(seeds));
  }
  const size_t selected = n - out.fallback_prompts;
  out.selected_variance = selected ? variance_sum / static_cast<double>(selected) : 0.0;
  out.explore_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (missing > 0) {
    SPOTLIGHT_LOG(warn) << "iteration " << iteration << ": " << missing << " of "
                        << n * static_cast<size_t>(candidates)
                        << " explored seeds missing at the deadline; " << out.fallback_prompts
                        << " prompts fell back to random seeds";
  }
  return out;
}

RunPublisher::RunPublisher(std::string run_id, store::WeightStore& weights,
                           store::KeyValueStore& state, bus::Publisher* bus,
                           const outage::Retrier* retry)
    : run_id_(std::move(run_id)),
      keys_(run_id_),
      weights_(weights),
      state_(state),
      bus_(bus),
      retry_(retry) {}

void RunPublisher::weights_ready(int64_t version, policy::Policy& policy,
                                 const IterationReport* last) {
  const auto publish_start = Clock::now();
  const std::string bytes = policy.weights_bytes();
  const auto manifest = call(retry_, [&] { return weights_.publish(version, bytes); });
  const double publish_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - publish_start).count();
  if (last) {
    nlohmann::json timing{{"iteration", last->iteration},
                          {"iteration_seconds", last->iteration_seconds},
                          {"explore_seconds", last->explore_seconds},
                          {"rollout_seconds", last->rollout_seconds},
                          {"train_seconds", last->train_seconds},
                          {"group_variance", last->group_variance}};
    call(retry_, [&] { state_.put(keys_.trainer_timing, timing.dump()); });
  }
  call(retry_, [&] { state_.put(keys_.trainer_iteration, std::to_string(version)); });
  if (bus_) {
    wire::WeightsNotice notice{version, manifest.checksum, keys_.prefix + ":weights",
                               static_cast<int64_t>(manifest.bytes), manifest.published_unix_ms};
    bus_->publish("weights", static_cast<uint64_t>(version) + 1, notice.encode());
    wire::IterationEvent event{run_id_, version,
                               last ? wire::IterationKind::kTrained : wire::IterationKind::kStarted,
                               0, version};
    bus_->publish("iteration", static_cast<uint64_t>(version) + 1, event.encode());
  }
  SPOTLIGHT_LOG(info) << "published weights v" << version << " (" << manifest.bytes << " bytes, "
                      << manifest.algorithm << " " << manifest.checksum << ") in " << publish_ms
                      << " ms";
}

void RunPublisher::finished(int64_t iterations) {
  call(retry_, [&] { state_.put(keys_.trainer_iteration, std::to_string(iterations)); });
  if (bus_) {
    wire::IterationEvent event{run_id_, iterations, wire::IterationKind::kFinished, 0, iterations};
    bus_->publish("iteration", static_cast<uint64_t>(iterations) + 2, event.encode());
  }
}

}  // namespace spotlight::trainer
