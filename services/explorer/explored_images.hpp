#pragma once
// The explorer's half of the trainer's exploration samples (exploration.sample_images_every, see
// services/trainer/exploration_samples.hpp): for the candidates of prompt 0 of every `every`-th
// iteration, the sampled image is kept in the run's store as a PNG under
// RunKeys::explored_image(iteration, prompt, seed), before the task's result is recorded, so the
// trainer finds the image of every result it selects from.
//
// Best effort: a failure (Redis unavailable, an image that does not encode) is logged and counted
// in spotlight_explorer_explored_image_errors_total, never thrown; the task's result does not wait
// for it. Thread-compatible, like the store it writes to.

#include <string>

#include "common/metrics/metrics.hpp"
#include "common/run/run_config.hpp"
#include "common/run/run_keys.hpp"
#include "common/store/key_value_store.hpp"
#include "common/task/image.hpp"
#include "common/wire/messages.hpp"

namespace spotlight::explorer {

class ExploredImageRecorder {
 public:
  // `kv` is the run's store (keys relative to RunKeys(run_id).prefix); every = 0 records nothing.
  ExploredImageRecorder(store::KeyValueStore& kv, const std::string& run_id, int every,
                        metrics::Counter recorded, metrics::Counter errors);

  // Records `image` (the one scored for `task`) when the task's iteration and prompt are sampled.
  void maybe_record(const wire::SeedTask& task, const task::Image& image);

 private:
  store::KeyValueStore& kv_;
  run::RunKeys keys_;
  int every_;
  metrics::Counter recorded_;
  metrics::Counter errors_;
};

}  // namespace spotlight::explorer
