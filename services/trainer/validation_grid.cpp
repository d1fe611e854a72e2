#include "services/trainer/validation_grid.hpp"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/image/png.hpp"
#include "common/seeds/seeds.hpp"
#include "common/task/score.hpp"

namespace spotlight::trainer {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

constexpr image::Rgb kCorrect{70, 200, 90};

std::string fixed(double value, int digits) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

image::GridCell cell(const task::Image& image, double reward, bool correct) {
  image::GridCell c;
  c.image = image::from_float_rgb(image.width, image.height, image.rgb);
  c.caption = {fixed(reward, 2) + (correct ? " ok" : "")};
  if (correct) c.frame = kCorrect;
  return c;
}

std::string file_name(int64_t iteration) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "iter-%06lld.png", static_cast<long long>(iteration));
  return buffer;
}

}  // namespace

uint64_t validation_grid_seed(std::size_t prompt, int column) {
  // Column 0 must equal GrpoTrainer::validate()'s seed of the prompt.
  if (column == 0) return seeds::derive(0, {seeds::kValidation, prompt});
  return seeds::derive(0, {seeds::kValidation, prompt, static_cast<uint64_t>(column)});
}

ValidationGridWriter::ValidationGridWriter(ValidationGridOptions options, policy::Policy& policy)
    : o_(std::move(options)), policy_(policy) {
  if (o_.seeds < 1) throw std::invalid_argument("validation grid: seeds must be >= 1");
  if (o_.dir.empty()) throw std::invalid_argument("validation grid: no directory");
}

ValidationGridRecord ValidationGridWriter::write(int64_t completed_iterations,
                                                 const ValidationReport& report) {
  const std::size_t rows =
      std::min(report.images.size(), static_cast<std::size_t>(std::max(0, o_.prompts)));
  if (rows == 0) throw std::invalid_argument("validation grid: the report kept no images");
  ValidationGridRecord record;
  record.iteration = completed_iterations;

  // Extra seeds, sampled like the validation (ODE) with the current weights, and scored.
  const auto sample_start = Clock::now();
  std::vector<task::Prompt> prompts;
  std::vector<uint64_t> seeds;
  for (std::size_t i = 0; i < rows; ++i) {
    for (int column = 1; column < o_.seeds; ++column) {
      prompts.push_back(report.images[i].prompt);
      seeds.push_back(validation_grid_seed(i, column));
    }
  }
  std::vector<task::Image> extra;
  if (!prompts.empty()) {
    sampler::SamplerOptions ode;
    ode.sde = false;
    ode.steps = o_.steps;
    ode.shift = o_.shift;
    extra = policy_.final_images(policy_.sample(prompts, seeds, ode, o_.chunk));
  }
  std::vector<task::Score> extra_scores;
  for (std::size_t k = 0; k < extra.size(); ++k)
    extra_scores.push_back(task::score(prompts[k], extra[k], policy_.task_options()));
  record.sample_seconds = seconds_since(sample_start);

  const auto draw_start = Clock::now();
  nlohmann::json line{{"iteration", completed_iterations},
                      {"geneval_score", report.geneval_score},
                      {"mean_reward", report.mean_reward},
                      {"validation_seconds", report.seconds}};
  std::vector<image::GridRow> grid;
  for (std::size_t i = 0; i < rows; ++i) {
    const ValidationSample& own = report.images[i];
    image::GridRow row;
    row.label = own.prompt.text();
    row.cells.push_back(cell(own.image, own.reward, own.correct));
    nlohmann::json entry{{"prompt", own.prompt.text()},
                         {"seeds", {own.seed}},
                         {"rewards", {own.reward}},
                         {"correct", {own.correct}}};
    for (int column = 1; column < o_.seeds; ++column) {
      const std::size_t k = i * static_cast<std::size_t>(o_.seeds - 1) + (column - 1);
      row.cells.push_back(cell(extra[k], extra_scores[k].reward, extra_scores[k].correct));
      entry["seeds"].push_back(seeds[k]);
      entry["rewards"].push_back(extra_scores[k].reward);
      entry["correct"].push_back(extra_scores[k].correct);
    }
    line["prompts"].push_back(entry);
    grid.push_back(std::move(row));
  }
  image::GridOptions options = o_.grid;
  options.title =
      (completed_iterations == 0 ? std::string("base model (iteration 0)")
                                 : "after iteration " + std::to_string(completed_iterations)) +
      ": GenEval-like " + fixed(report.geneval_score, 3) + ", mean reward " +
      fixed(report.mean_reward, 3);
  record.layout = image::layout_grid(grid, options);
  const image::RgbImage picture = image::render_grid(grid, options);
  record.file = o_.dir / file_name(completed_iterations);
  const std::string png = image::encode_png(picture);
  image::write_file_atomically(record.file, png);
  image::write_file_atomically(o_.dir / "latest.png", png);
  record.bytes = png.size();
  record.draw_seconds = seconds_since(draw_start);
  line["file"] = record.file.filename().string();
  line["bytes"] = record.bytes;
  line["sample_seconds"] = record.sample_seconds;
  line["draw_seconds"] = record.draw_seconds;
  std::ofstream(o_.dir / "grids.jsonl", std::ios::app) << line.dump() << "\n";
  return record;
}

}  // namespace spotlight::trainer
