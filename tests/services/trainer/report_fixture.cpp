#include "tests/services/trainer/report_fixture.hpp"

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "common/image/grid.hpp"
#include "common/image/png.hpp"

namespace spotlight::testing {
namespace {

using Json = nlohmann::json;

// A 32x32 "model output": `count` squares of a colour on black.
image::RgbImage squares(int count, image::Rgb colour) {
  auto out = image::RgbImage::filled(32, 32, image::kBlack);
  for (int i = 0; i < count; ++i)
    out.fill_rect(3 + 10 * i, 4 + 7 * (i % 2), 7, 7, colour);
  return out;
}

std::string grid_png(int iteration) {
  std::vector<image::GridRow> rows;
  for (const auto& [prompt, colour] : {std::pair{"three red squares", image::Rgb{220, 30, 30}},
                                       {"a green square", {30, 200, 40}}}) {
    image::GridRow row{prompt, {}};
    for (int seed = 0; seed < 3; ++seed) {
      image::GridCell cell;
      cell.image = squares(1 + (seed + iteration) % 3, colour);
      cell.caption = {"0." + std::to_string(3 + iteration) + (seed == 0 ? " ok" : "")};
      if (seed == 0) cell.frame = image::Rgb{70, 200, 90};
      row.cells.push_back(cell);
    }
    rows.push_back(row);
  }
  image::GridOptions o;
  o.title = "after iteration " + std::to_string(iteration);
  return image::encode_png(image::render_grid(rows, o));
}

void write(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace

ReportFixture write_report_fixture(const std::filesystem::path& dir) {
  ReportFixture f;
  std::filesystem::create_directories(dir);
  write(dir / "config.yaml", "run:\n  seed: 0\nexploration:\n  mode: async\n");
  Json summary{
      {"mode", "async"},
      {"seed", 0},
      {"iterations", f.iterations},
      {"train_wall_seconds", 42.5},
      {"base_geneval_score", 0.31},
      {"final_geneval_score", 0.43},
      {"final_mean_reward", 0.61},
      {"mean_iteration_seconds", 7.1},
      {"queue",
       {{"results", 96}, {"acked_total", 96}, {"reclaimed_total", 2}, {"dead_letters", 0}}},
      {"cost", {{"total", 0.12}, {"reserved", 0.09}, {"spot", 0.03}}}};
  write(dir / "summary.json", summary.dump(2));
  std::string metrics, cost;
  const auto validation = [](double score) {
    return Json{{"geneval_score", score},
                {"mean_reward", score + 0.2},
                {"seconds", 3.0},
                {"per_category", {{"counting", score - 0.1}, {"position", score + 0.05}}}};
  };
  metrics += Json{{"iteration", -1}, {"validation", validation(0.31)}}.dump() + "\n";
  for (int k = 0; k < f.iterations; ++k) {
    Json line{{"iteration", k},
              {"reward_mean", 0.5 + 0.02 * k},
              {"explore_seconds", 0.8},
              {"rollout_seconds", 2.0},
              {"reward_seconds", 0.1},
              {"train_seconds", 4.0},
              {"iteration_seconds", 7.1},
              {"audit_seconds", k % 2 ? 0.5 : 0.0},
              {"wall_seconds", 7.1 * (k + 1)}};
    if (k % 2 == 1) line["validation"] = validation(0.31 + 0.04 * (k + 1) / 2);
    if (k % 2 == 1) line["kendall_tau"] = 0.4 + 0.1 * k / 2;
    metrics += line.dump() + "\n";
    if (k == 2) metrics += "{\"iteration\": 3, torn by a crash\n";
    cost += Json{{"iteration", k},
                 {"cost", 0.02 * (k + 1)},
                 {"reserved_cost", 0.015 * (k + 1)},
                 {"spot_cost", 0.005 * (k + 1)}}
                .dump() +
            "\n";
  }
  write(dir / "metrics.jsonl", metrics);
  write(dir / "cost.jsonl", cost);
  std::string grids;
  for (int i = 0; i < f.validation_grids; ++i) {
    const int iteration = 2 * i;
    char name[32];
    std::snprintf(name, sizeof name, "iter-%06d.png", iteration);
    const std::string png = grid_png(iteration);
    write(dir / "validation" / name, png);
    grids += Json{{"iteration", iteration},
                  {"file", name},
                  {"geneval_score", 0.31 + 0.02 * iteration},
                  {"mean_reward", 0.5 + 0.02 * iteration},
                  {"validation_seconds", 3.0},
                  {"sample_seconds", 0.2},
                  {"draw_seconds", 0.01},
                  {"bytes", png.size()},
                  {"prompts",
                   {{{"prompt", "three red squares"},
                     {"seeds", {1, 2, 3}},
                     {"rewards", {0.3, 0.5, 0.7}},
                     {"correct", {false, false, true}}}}}}
                 .dump() +
             "\n";
  }
  write(dir / "validation" / "grids.jsonl", grids);
  std::string samples;
  for (int iteration : {0, 5}) {
    char name[32];
    std::snprintf(name, sizeof name, "iter-%06d.png", iteration);
    write(dir / "exploration" / name, grid_png(iteration));
    samples += Json{{"iteration", iteration},
                    {"file", name},
                    {"prompt", "two blue discs"},
                    {"kept_variance", 0.12},
                    {"all_variance", 0.05},
                    {"candidates", Json::array({{{"seed", 1}, {"reward", 0.2}, {"kept", true}}})}}
                   .dump() +
               "\n";
  }
  write(dir / "exploration" / "samples.jsonl", samples);
  return f;
}

}  // namespace spotlight::testing
