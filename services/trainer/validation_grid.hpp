#pragma once
// The image grid the trainer writes at every validation, so people see what the model draws and
// not only its score. Rows: the first `prompts` validation prompts; columns: `seeds` fixed seeds
// per prompt, the first being the validation's own (its image and score come from the
// validation), the others extra samples drawn the same way (ODE, validation steps). Every image
// is the model's output as the scorer sees it, upscaled with nearest-neighbour, captioned with its
// reward ("ok" and a green frame when strictly correct); each row is labelled with its prompt.
//
// write() puts into `dir`:
//   iter-<completed iterations, 6 digits>.png   the grid (iteration 0: the base model)
//   latest.png                                  the newest grid (what /validation/latest.png
//   serves) grids.jsonl                                 one line per grid: file, scores, timings
// Files are replaced atomically (a reader never sees a partial PNG).

#include <cstdint>
#include <filesystem>
#include <string>

#include "common/image/grid.hpp"
#include "common/policy/policy.hpp"
#include "services/trainer/grpo_trainer.hpp"

namespace spotlight::trainer {

struct ValidationGridOptions {
  std::filesystem::path dir;  // <run.dir>/validation
  int prompts = 8;            // rows; at most the validation's kept samples
  int seeds = 4;              // columns, >= 1
  int steps = 10;             // the validation sampler (ODE)
  double shift = 1.0;
  int chunk = 32;  // samples per forward of the extra seeds
  image::GridOptions grid;
};

struct ValidationGridRecord {
  int64_t iteration = 0;  // iterations completed when validated (0: the base model)
  std::filesystem::path file;
  std::size_t bytes = 0;
  double sample_seconds = 0.0;  // extra seeds: sampling and scoring
  double draw_seconds = 0.0;    // layout, PNG encoding, files
  image::GridLayout layout;     // where each image is in the PNG (row: prompt, column: seed)
};

// Fixed seed `column` of validation prompt `prompt` (column 0 is the validation's own seed).
uint64_t validation_grid_seed(std::size_t prompt, int column);

class ValidationGridWriter {
 public:
  ValidationGridWriter(ValidationGridOptions options, policy::Policy& policy);

  // Draws the grid of `report` (its images: the first prompts' validation images) after
  // `completed_iterations`, with the policy's current weights for the extra seeds. Throws
  // std::invalid_argument when the report kept no images; filesystem errors propagate.
  ValidationGridRecord write(int64_t completed_iterations, const ValidationReport& report);

  const ValidationGridOptions& options() const { return o_; }

 private:
  ValidationGridOptions o_;
  policy::Policy& policy_;
};

}  // namespace spotlight::trainer
