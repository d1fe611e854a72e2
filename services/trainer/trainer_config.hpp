#pragma once
// The trainer's configuration schema and its translation into the library's options structs.

#include "common/config/config.hpp"
#include "common/config/schema.hpp"
#include "common/policy/policy.hpp"
#include "common/run/run_config.hpp"
#include "services/trainer/bench.hpp"
#include "services/trainer/grpo_trainer.hpp"
#include "services/trainer/pretrain.hpp"

namespace spotlight::trainer {

// The run schema (common/run): the trainer reads every section of the run's file.
const config::Schema& trainer_schema();

using run::policy_options;
PretrainOptions pretrain_options(const config::Config& config);
GrpoOptions grpo_options(const config::Config& config);
BenchOptions bench_options(const config::Config& config);

}  // namespace spotlight::trainer
