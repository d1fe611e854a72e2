#pragma once
// The trainer's side of exploration.mode=async (DESIGN.md section 3):
//  - AsyncSeedSource reads what the explorers found for an iteration from the lease queue's
//    results, waiting up to a deadline, and selects the G of maximum variance per prompt;
//    prompts with fewer than G explored seeds fall back to random seeds (counted).
//  - RunPublisher publishes each checkpointed weights version to the weight store, then the
//    trainer's iteration and timing to Redis, then notices on the bus (notices are never the
//    only copy: planner and explorers read Redis).

#include <chrono>
#include <memory>
#include <stop_token>
#include <string>

#include "common/bus/publisher.hpp"
#include "common/outage/retry.hpp"
#include "common/queue/lease_queue.hpp"
#include "common/run/run_config.hpp"
#include "common/store/key_value_store.hpp"
#include "common/store/weight_store.hpp"
#include "services/trainer/grpo_trainer.hpp"
#include "services/trainer/seed_source.hpp"

namespace spotlight::trainer {

struct AsyncSeedOptions {
  int group_size = 8;
  int candidates = 24;
  uint64_t run_seed = 0;
  std::chrono::duration<double> max_wait{60.0};
  std::chrono::milliseconds poll{50};  // how often results are re-read while waiting
  std::stop_token stop;                // ends the wait early (select() returns what it has)
};

class AsyncSeedSource final : public SeedSource {
 public:
  // `plans` (may be null: N = options.candidates always) is the run's KeyValueStore holding the
  // planner's per-iteration plan records (common/run/plan_record.hpp).
  // `retry` (may be null: errors propagate) runs every queue and store call through Redis
  // outages; the time spent waiting for Redis counts toward max_wait but never cuts a call short.
  AsyncSeedSource(AsyncSeedOptions options, queue::LeaseQueue& queue,
                  store::KeyValueStore* plans = nullptr, const outage::Retrier* retry = nullptr);
  // N = the iteration's plan record's candidates (read while waiting; options.candidates when no
  // record shows up by the deadline). Waits until every candidate of every prompt has a result
  // or max_wait passes; N = 0 returns random seeds at once. The wait is reported as
  // explore_seconds (the time exploration holds the trainer up).
  SeedSelection select(int64_t iteration, const std::vector<task::Prompt>& prompts) override;

 private:
  AsyncSeedOptions o_;
  queue::LeaseQueue& queue_;
  store::KeyValueStore* plans_;
  const outage::Retrier* retry_;
};

class RunPublisher final : public TrainerObserver {
 public:
  // `retry` as for AsyncSeedSource.
  RunPublisher(std::string run_id, store::WeightStore& weights, store::KeyValueStore& state,
               bus::Publisher* bus, const outage::Retrier* retry = nullptr);
  void weights_ready(int64_t version, policy::Policy& policy, const IterationReport* last) override;
  void finished(int64_t iterations) override;

 private:
  std::string run_id_;
  run::RunKeys keys_;
  store::WeightStore& weights_;
  store::KeyValueStore& state_;
  bus::Publisher* bus_;
  const outage::Retrier* retry_;
};

}  // namespace spotlight::trainer
