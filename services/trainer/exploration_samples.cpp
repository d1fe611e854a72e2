#include "services/trainer/exploration_samples.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <set>

#include <nlohmann/json.hpp>

#include "common/image/errors.hpp"
#include "common/image/png.hpp"
#include "common/log/log.hpp"
#include "common/rl/selection.hpp"

namespace spotlight::trainer {
namespace {

constexpr image::Rgb kKept{240, 160, 40};
constexpr int kMissingSize = 32;  // pixels of the empty cell of a missing image

std::string fixed(double value, int digits) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

std::string file_name(int64_t iteration) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "iter-%06lld.png", static_cast<long long>(iteration));
  return buffer;
}

}  // namespace

ExplorationSampler::ExplorationSampler(std::unique_ptr<SeedSource> inner,
                                       ExplorationSampleOptions options,
                                       store::KeyValueStore& images)
    : inner_(std::move(inner)), o_(std::move(options)), keys_(o_.run_id), images_(images) {}

SeedSelection ExplorationSampler::select(int64_t iteration,
                                         const std::vector<task::Prompt>& prompts) {
  SeedSelection selection = inner_->select(iteration, prompts);
  // Nothing explored for prompt 0 (e.g. the planner chose N = 0): nothing to draw.
  if (!prompts.empty() && run::samples_explored_images(iteration, 0, o_.every) &&
      !selection.candidate_seeds.empty() && !selection.candidate_seeds[0].empty()) {
    try {
      write(iteration, prompts[0], selection);
    } catch (const std::exception& e) {
      ++stats_.errors;
      SPOTLIGHT_LOG(warn) << "exploration sample of iteration " << iteration
                          << " not written: " << e.what();
    }
  }
  return selection;
}

void ExplorationSampler::write(int64_t iteration, const task::Prompt& prompt,
                               const SeedSelection& selection) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto& seeds = selection.candidate_seeds[0];
  const auto& rewards = selection.candidate_rewards[0];
  // Fewer than G explored in time: the trainer fell back to random seeds for this prompt.
  const bool fallback = seeds.size() < static_cast<std::size_t>(o_.group_size);
  std::set<uint64_t> kept;
  if (!fallback) kept.insert(selection.seeds[0].begin(), selection.seeds[0].end());
  // Ascending reward, ties by index: the order select_max_variance works in, so the kept seeds
  // are the left and right ends of the row.
  std::vector<std::size_t> order(seeds.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return rewards[a] < rewards[b]; });

  std::vector<image::GridRow> grid;
  nlohmann::json candidates = nlohmann::json::array();
  std::vector<double> kept_rewards;
  std::size_t kept_low = 0;  // kept candidates at the low end
  bool low_run = true;
  for (std::size_t position = 0; position < order.size(); ++position) {
    const std::size_t i = order[position];
    const bool is_kept = kept.count(seeds[i]) > 0;
    if (is_kept) kept_rewards.push_back(rewards[i]);
    if (low_run && is_kept) {
      ++kept_low;
    } else {
      low_run = false;
    }
    image::GridCell cell;
    bool have_image = false;
    const std::string key = keys_.explored_image(iteration, 0, seeds[i]);
    try {
      if (const auto png = images_.get(key)) {
        cell.image = image::decode_png(*png, 1 << 20);
        have_image = true;
      }
    } catch (const std::exception& e) {
      ++stats_.errors;
      SPOTLIGHT_LOG(warn) << "explored image " << key << " unusable: " << e.what();
    }
    if (!have_image) {
      ++stats_.missing_images;
      cell.image = image::RgbImage::filled(kMissingSize, kMissingSize, o_.grid.background);
    }
    cell.caption = {fixed(rewards[i], 2), is_kept ? "kept" : (have_image ? "" : "no image")};
    if (is_kept) cell.frame = kKept;
    if (grid.empty() || static_cast<int>(grid.back().cells.size()) >= std::max(1, o_.columns)) {
      grid.emplace_back();
      if (grid.size() == 1) grid.back().label = prompt.text();
    }
    grid.back().cells.push_back(std::move(cell));
    candidates.push_back(
        {{"seed", seeds[i]}, {"reward", rewards[i]}, {"kept", is_kept}, {"image", have_image}});
  }
  const double kept_variance = rl::variance(kept_rewards);
  const double all_variance = rl::variance(rewards);
  image::GridOptions options = o_.grid;
  options.title = "iteration " + std::to_string(iteration) + ": ";
  if (fallback) {
    options.title += std::to_string(seeds.size()) +
                     " candidates explored, fewer than G = " + std::to_string(o_.group_size) +
                     ": random seeds trained";
  } else {
    options.title += "kept " + std::to_string(kept_rewards.size()) + " of " +
                     std::to_string(seeds.size()) + " (the " + std::to_string(kept_low) +
                     " lowest, " + std::to_string(kept_rewards.size() - kept_low) +
                     " highest rewards), variance " + fixed(kept_variance, 3) + " vs " +
                     fixed(all_variance, 3) + " of all";
  }
  const std::string png = image::encode_png(image::render_grid(grid, options));
  const auto file = o_.dir / file_name(iteration);
  image::write_file_atomically(file, png);
  ++stats_.written;
  for (uint64_t seed : seeds) {
    try {
      images_.erase(keys_.explored_image(iteration, 0, seed));
    } catch (const std::exception& e) {
      ++stats_.errors;  // left behind: harmless, never read again
      SPOTLIGHT_LOG(warn) << "explored images of iteration " << iteration
                          << " not erased: " << e.what();
      break;
    }
  }
  nlohmann::json line{{"iteration", iteration},
                      {"file", file.filename().string()},
                      {"prompt", prompt.text()},
                      {"group_size", o_.group_size},
                      {"fallback", fallback},
                      {"kept_variance", kept_variance},
                      {"all_variance", all_variance},
                      {"bytes", png.size()},
                      {"seconds", std::chrono::duration<double>(Clock::now() - start).count()},
                      {"candidates", candidates}};
  std::ofstream(o_.dir / "samples.jsonl", std::ios::app) << line.dump() << "\n";
}

}  // namespace spotlight::trainer
