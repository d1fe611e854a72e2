#include "services/trainer/run_images.hpp"

#include <iomanip>

#include "common/log/log.hpp"
#include "common/run/exploration_config.hpp"

namespace spotlight::trainer {

RunImages::RunImages(const config::Config& config, const GrpoOptions& options,
                     policy::Policy& policy, metrics::Registry& registry)
    : config_(config),
      options_(options),
      native_(policy.is_native()),
      grids_written_(registry.counter("spotlight_trainer_validation_grids_total",
                                      "Validation image grids written.")),
      grid_errors_(
          registry.counter("spotlight_trainer_validation_grid_errors_total",
                           "Validation image grids not written because of a failure (logged).")),
      samples_written_(
          registry.counter("spotlight_trainer_exploration_samples_total",
                           "Exploration samples (what seed selection chose) written.")),
      sample_errors_(
          registry.counter("spotlight_trainer_exploration_sample_errors_total",
                           "Exploration samples or candidate images lost to a failure (logged).")) {
  if (native_ && options.validation_images > 0 && !options.run_dir.empty()) {
    ValidationGridOptions g;
    g.dir = options.run_dir / "validation";
    g.prompts = options.validation_images;
    g.seeds = config.get<int>("validation.grid_seeds");
    g.steps = options.validation_steps;
    g.shift = options.sampler.shift;
    grids_ = std::make_unique<ValidationGridWriter>(g, policy);
  }
}

std::unique_ptr<SeedSource> RunImages::wrap(std::unique_ptr<SeedSource> seeds,
                                            store::KeyValueStore* state) {
  const int every = run::exploration_options(config_).sample_images_every;
  if (!native_ || state == nullptr || every <= 0 || options_.run_dir.empty()) return seeds;
  ExplorationSampleOptions o;
  o.dir = options_.run_dir / "exploration";
  o.run_id = config_.get_string("run.id");
  o.every = every;
  o.group_size = options_.group_size;
  auto sampler = std::make_unique<ExplorationSampler>(std::move(seeds), o, *state);
  samples_ = sampler.get();
  return sampler;
}

void RunImages::observe(const IterationReport& r) {
  if (grids_ && r.validation) {
    try {
      const auto g = grids_->write(r.iteration + 1, *r.validation);
      grids_written_.inc();
      SPOTLIGHT_LOG(info) << std::fixed << std::setprecision(2) << "validation grid "
                          << g.file.string() << " (" << g.bytes << " bytes; "
                          << g.sample_seconds + g.draw_seconds << " s, validation "
                          << r.validation->seconds << " s)";
    } catch (const std::exception& e) {
      grid_errors_.inc();
      SPOTLIGHT_LOG(warn) << "validation grid not written: " << e.what();
    }
  }
  if (samples_) {
    const auto& stats = samples_->stats();
    samples_written_.inc(static_cast<double>(stats.written) - samples_written_.value());
    sample_errors_.inc(static_cast<double>(stats.errors) - sample_errors_.value());
  }
}

}  // namespace spotlight::trainer
