#pragma once
// What seed selection chose, drawn for people (exploration.sample_images_every): for prompt 0 of
// every `every`-th iteration, the explorers keep a PNG of each candidate they sampled
// (RunKeys::explored_image, services/explorer/explored_images.hpp); after selecting, the trainer
// draws every candidate of that prompt in ascending reward order, captioned with its explored
// reward, the kept ones framed and marked "kept", and titled with the variance selection gained.
// The images are the explorers' own outputs (stale weights, exploration steps); a candidate whose
// image is missing is drawn as an empty cell marked "no image".
//
// ExplorationSampler wraps the run's SeedSource and returns its selection unchanged. Per sample it
// writes into `dir`: iter-<iteration, 6 digits>.png and a line of samples.jsonl, then erases the
// images from the store. Failures (store unavailable, an image that does not decode, a file that
// cannot be written) are logged and counted, never thrown: a sample is never worth an iteration.

#include <cstdint>
#include <filesystem>
#include <memory>

#include "common/image/grid.hpp"
#include "common/run/run_config.hpp"
#include "common/run/run_keys.hpp"
#include "common/store/key_value_store.hpp"
#include "services/trainer/seed_source.hpp"

namespace spotlight::trainer {

struct ExplorationSampleOptions {
  std::filesystem::path dir;  // <run.dir>/exploration
  std::string run_id;         // RunKeys of the explorers' images
  int every = 5;              // 0: never
  int group_size = 8;         // G, for the title
  int columns = 8;            // candidates per grid row
  image::GridOptions grid;
};

struct ExplorationSampleStats {
  int64_t written = 0;         // samples drawn
  int64_t missing_images = 0;  // candidates drawn without an image
  int64_t errors = 0;          // samples or images lost to a failure (logged)
};

class ExplorationSampler final : public SeedSource {
 public:
  // `images` is the run's KeyValueStore (keys relative to RunKeys::prefix); it must outlive this.
  ExplorationSampler(std::unique_ptr<SeedSource> inner, ExplorationSampleOptions options,
                     store::KeyValueStore& images);

  SeedSelection select(int64_t iteration, const std::vector<task::Prompt>& prompts) override;
  // The rest is the inner source's (a decorator must not swallow its checkpoint or clean-up).
  std::map<std::string, std::string> checkpoint_files() override {
    return inner_->checkpoint_files();
  }
  void restore(const std::map<std::string, std::string>& files) override { inner_->restore(files); }
  void iteration_done(int64_t iteration) override { inner_->iteration_done(iteration); }

  const ExplorationSampleStats& stats() const { return stats_; }

 private:
  void write(int64_t iteration, const task::Prompt& prompt, const SeedSelection& selection);

  std::unique_ptr<SeedSource> inner_;
  ExplorationSampleOptions o_;
  run::RunKeys keys_;
  store::KeyValueStore& images_;
  ExplorationSampleStats stats_;
};

}  // namespace spotlight::trainer
