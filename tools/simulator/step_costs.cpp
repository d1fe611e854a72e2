#include "tools/simulator/step_costs.hpp"

#include <cmath>
#include <stdexcept>

namespace spotlight::simulator {

StepCosts estimated_step_costs(const std::string& hardware) {
  StepCosts c;
  c.hardware = hardware;
  if (hardware == "H200") {
    c.seconds_per_sample_step = 0.10;
    c.source =
        "estimate: a Qwen-Image image at 1024x1024 with 50 steps takes roughly 20 s on an H200 "
        "(public figure, not measured by us), 0.4 s per step with CFG; at 512x512 the DiT sees "
        "1024 instead of 4096 image tokens and its cost is dominated by the token-linear layers, "
        "so about a quarter: 0.10 s, assuming batched sampling keeps the GPU as busy as one "
        "1024x1024 image does";
  } else if (hardware == "H100") {
    c.seconds_per_sample_step = 0.11;
    c.source =
        "estimate: the H200 estimate (0.10 s) + 10% for the H100's lower memory bandwidth (same "
        "bf16 peak); not measured";
  } else {
    throw std::invalid_argument("step costs: hardware must be H100 or H200, not " + hardware);
  }
  return c;
}

StepCosts with_measured_step_time(StepCosts costs, double seconds_per_sample_step,
                                  std::string source) {
  if (!(seconds_per_sample_step > 0)) {
    throw std::invalid_argument("step costs: a measured step time must be > 0");
  }
  costs.seconds_per_sample_step = seconds_per_sample_step;
  costs.measured = true;
  costs.source = std::move(source);
  return costs;
}

double dp_efficiency(const StepCosts& costs, double scale) {
  if (scale <= 1) return 1.0;
  return std::pow(costs.dp_efficiency_per_doubling, std::log2(scale));
}

void write_cost_table(std::ostream& out, const StepCosts& c) {
  out << "| figure | value | measured or assumed | source |\n|---|---|---|---|\n";
  out << "| t: one sample, one sampler step, one GPU (" << c.hardware << ", 512x512, CFG) | "
      << c.seconds_per_sample_step << " s | " << (c.measured ? "measured" : "assumed") << " | "
      << c.source << " |\n";
  out << "| trained step / sampler step | " << c.train_cost_factor
      << " | assumed | forward + backward of the policy with the log-probability; the reference "
         "forward of the KL term is neglected |\n";
  out << "| spot GPU start-up | " << c.explorer_startup_seconds
      << " s | assumed | boot, container start and a weights load before the first task |\n";
  out << "| weights to spot GPUs on the critical path | " << c.weight_publish_seconds
      << " s | assumed | offload: rollouts need the new weights at once; async: the trainer "
         "publishes each version |\n";
  out << "| async: staleness audit's share of an iteration | " << c.async_audit_share
      << " | measured (embedded) | the six-mode study: async's audit share 0.051 against none's "
         "0.018 |\n";
  out << "| async: trainer's least wait for explored seeds, share of an iteration | "
      << c.async_wait_share
      << " | measured (embedded) | the six-mode study's trainer wait share 0.254, one spot core "
         "beside one reserved core |\n";
  out << "| data-parallel efficiency per doubling of the trainer's GPUs | "
      << c.dp_efficiency_per_doubling
      << " | assumed | strong scaling of a fixed batch: smaller per-GPU batches, more "
         "communication; to be measured on the data-parallel trainer |\n";
  out << "| reserved price | " << c.reserved_price_per_hour
      << " per GPU-hour | assumed | a unit; every ratio is independent of it |\n";
  out << "| spot price | " << c.spot_price_ratio
      << " x reserved | assumed | the reference result prices spot 69-77% below reserved; billed "
         "per second "
         "while held (starting, busy or idle) |\n";
}

}  // namespace spotlight::simulator
