#include "services/explorer/explored_images.hpp"

#include "common/image/png.hpp"
#include "common/log/log.hpp"

namespace spotlight::explorer {

ExploredImageRecorder::ExploredImageRecorder(store::KeyValueStore& kv, const std::string& run_id,
                                             int every, metrics::Counter recorded,
                                             metrics::Counter errors)
    : kv_(kv), keys_(run_id), every_(every), recorded_(recorded), errors_(errors) {}

void ExploredImageRecorder::maybe_record(const wire::SeedTask& task, const task::Image& image) {
  if (!run::samples_explored_images(task.iteration, task.prompt_index, every_)) return;
  try {
    const std::string png =
        image::encode_png(image::from_float_rgb(image.width, image.height, image.rgb));
    kv_.put(keys_.explored_image(task.iteration, task.prompt_index, task.seed), png);
    recorded_.inc();
  } catch (const std::exception& e) {
    errors_.inc();
    log::warn("explored image of iteration {} seed {} not kept: {}", task.iteration, task.seed,
              e.what());
  }
}

}  // namespace spotlight::explorer
