#pragma once
// What the simulated cluster's work costs: one table, each figure with where it comes from.
// The per-sample-step time t is the one figure every sample's time derives from; it is an
// estimate (estimated_step_costs) until a GPU measurement replaces it (with_measured_step_time:
// scripts/gpu-check's results, where they exist). Prices are configuration, not measurements.

#include <ostream>
#include <string>

namespace spotlight::simulator {

struct StepCosts {
  std::string hardware = "H200";
  // t: one sample at one sampler step on one GPU, at the training resolution (512x512), CFG
  // included, in a batched sampler (explorer batch >= 8).
  double seconds_per_sample_step = 0.10;
  bool measured = false;
  std::string source;  // how t was obtained (the estimate's derivation, or the measurement)
  // A trained step (forward + backward with the log-probability) / a sampler step.
  double train_cost_factor = 3.0;
  // A joining spot GPU: boot, image pull, weights load, until it takes its first task.
  double explorer_startup_seconds = 120;
  // New weights reaching spot GPUs that need them at once (offload's rollouts), and the trainer's
  // publish of each version for async's explorers (on its critical path).
  double weight_publish_seconds = 5;
  // async's overheads on the trainer's critical path, measured by the embedded benchmark
  // (deploy/benchmark/study-6-modes, async against none): the staleness audit's extra share of an
  // iteration (0.051 - 0.018), and the share of its iteration the trainer waited for explored
  // seeds (0.254): a floor on async's wait, which the fluid pool alone may make shorter.
  double async_audit_share = 0.033;
  double async_wait_share = 0.25;
  // Data-parallel efficiency of the trainer on k times its GPUs: per_doubling ^ log2(k).
  double dp_efficiency_per_doubling = 0.9;
  double reserved_price_per_hour = 4.0;  // per GPU-hour
  double spot_price_ratio = 0.27;        // spot / reserved (69-77% below reserved)
};

// The estimate for "H100" or "H200" (throws std::invalid_argument otherwise).
StepCosts estimated_step_costs(const std::string& hardware);

// The one place a measured per-sample-step time enters: replaces t and says where it came from.
StepCosts with_measured_step_time(StepCosts costs, double seconds_per_sample_step,
                                  std::string source);

// Data-parallel efficiency at `scale` times the trainer's GPUs (1 at scale <= 1).
double dp_efficiency(const StepCosts& costs, double scale);

// The table as markdown (figure, value, measured or assumed, source).
void write_cost_table(std::ostream& out, const StepCosts& costs);

}  // namespace spotlight::simulator
