#pragma once
// The trainer's sections of the job's schema (services/job/job_schema.hpp composes them);
// services/trainer/trainer_config reads them into the trainer's options. No LibTorch:
//
//   pretrain_schema()   pretrain.*
//   training_schema()   trainer.*, validation.*, audit.*
//   bench_schema()      bench.*  (spotlight-trainer bench)
#include "common/config/schema.hpp"

namespace spotlight::trainer {

const config::Schema& pretrain_schema();
const config::Schema& training_schema();
const config::Schema& bench_schema();

}  // namespace spotlight::trainer
