#pragma once
// What a training run draws for people, wired from the run configuration: the validation grid of
// every validation (validation.grid_prompts, validation.grid_seeds; validation_grid.hpp) and, in
// async runs, the exploration samples (exploration.sample_images_every; exploration_samples.hpp).
// Only a native policy draws: a user's TorchScript model (model.kind torchscript) may not output
// RGB images. Failures are logged and counted, never thrown: images are never worth an iteration.
// Metrics: spotlight_trainer_validation_grids_total, ..._validation_grid_errors_total,
// ..._exploration_samples_total, ..._exploration_sample_errors_total.

#include <memory>

#include "common/config/config.hpp"
#include "common/metrics/metrics.hpp"
#include "common/policy/policy.hpp"
#include "common/store/key_value_store.hpp"
#include "services/trainer/exploration_samples.hpp"
#include "services/trainer/grpo_trainer.hpp"
#include "services/trainer/validation_grid.hpp"

namespace spotlight::trainer {

class RunImages {
 public:
  // `policy` draws the grids' extra seeds; it and `registry` must outlive this.
  RunImages(const config::Config& config, const GrpoOptions& options, policy::Policy& policy,
            metrics::Registry& registry);

  // `seeds` with the exploration sampler around it when the run samples explored images (async,
  // `state` not null, exploration.sample_images_every > 0); else `seeds` unchanged. The sampler
  // reads and erases the explorers' images through `state`, which must outlive the result.
  std::unique_ptr<SeedSource> wrap(std::unique_ptr<SeedSource> seeds, store::KeyValueStore* state);

  // After each report (before the next update): draws the grid of its validation, if any, and
  // updates the metrics.
  void observe(const IterationReport& report);

 private:
  const config::Config& config_;
  GrpoOptions options_;
  bool native_;  // policy.is_native(): its outputs are RGB images
  std::unique_ptr<ValidationGridWriter> grids_;
  ExplorationSampler* samples_ = nullptr;  // owned by the seed source wrap() returned
  metrics::Counter grids_written_, grid_errors_, samples_written_, sample_errors_;
};

}  // namespace spotlight::trainer
