#pragma once
// RunPublisher publishes each checkpointed weights version to the weight store, then the
// trainer's iteration and timing to Redis, then notices on the bus (notices are never the only
// copy: planner and explorers read Redis). exploration.mode=async and offload
// (docs/iteration.md).

#include <cstdint>
#include <string>

#include "common/bus/publisher.hpp"
#include "common/outage/retry.hpp"
#include "common/run/run_state.hpp"
#include "common/store/key_value_store.hpp"
#include "common/store/weight_store.hpp"
#include "services/trainer/grpo_trainer.hpp"

namespace spotlight::trainer {

class RunPublisher final : public TrainerObserver {
 public:
  // `retry` (may be null): how Redis outages are retried (outage::Retrier).
  RunPublisher(std::string run_id, store::WeightStore& weights, store::KeyValueStore& state,
               bus::Publisher* bus, const outage::Retrier* retry = nullptr);
  void weights_ready(int64_t version, policy::Policy& policy, const IterationReport* last) override;
  void finished(int64_t iterations) override;

 private:
  std::string run_id_;
  run::RunState state_;
  store::WeightStore& weights_;
  bus::Publisher* bus_;
  const outage::Retrier* retry_;
};

}  // namespace spotlight::trainer
