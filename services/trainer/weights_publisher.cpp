#include "services/trainer/weights_publisher.hpp"

#include <chrono>
#include <utility>

#include "common/clock/unix_time.hpp"
#include "common/log/log.hpp"
#include "common/wire/messages.hpp"

namespace spotlight::trainer {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

RunPublisher::RunPublisher(std::string run_id, store::WeightStore& weights,
                           store::KeyValueStore& state, bus::Publisher* bus,
                           const outage::Retrier* retry)
    : run_id_(std::move(run_id)),
      state_(state, run::RunKeys(run_id_)),
      weights_(weights),
      bus_(bus),
      retry_(retry) {}

void RunPublisher::weights_ready(int64_t version, policy::Policy& policy,
                                 const IterationReport* last) {
  const auto publish_start = Clock::now();
  const std::string bytes = policy.weights_bytes();
  const auto manifest = outage::call_with(retry_, [&] { return weights_.publish(version, bytes); });
  const double publish_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - publish_start).count();
  if (last) {
    const wire::TrainerTiming timing{.iteration = last->iteration,
                                     .iteration_seconds = last->iteration_seconds,
                                     .explore_seconds = last->explore_seconds,
                                     .rollout_seconds = last->rollout_seconds,
                                     .train_seconds = last->train_seconds,
                                     .group_variance = last->group_variance};
    outage::call_with(retry_, [&] { state_.put_trainer_timing(timing); });
  }
  const wire::TrainerProgress progress{
      .iteration = version, .finished = false, .unix_ms = clock::unix_ms()};
  outage::call_with(retry_, [&] { state_.put_trainer_progress(progress); });
  if (bus_) {
    wire::WeightsNotice notice{version, manifest.checksum, state_.keys().weights,
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
  const wire::TrainerProgress progress{
      .iteration = iterations, .finished = true, .unix_ms = clock::unix_ms()};
  outage::call_with(retry_, [&] { state_.put_trainer_progress(progress); });
  if (bus_) {
    wire::IterationEvent event{run_id_, iterations, wire::IterationKind::kFinished, 0, iterations};
    bus_->publish("iteration", static_cast<uint64_t>(iterations) + 2, event.encode());
  }
}

}  // namespace spotlight::trainer
