// validation_grid_bench: what a validation grid costs next to the validation it belongs to,
// measured in one process, interleaved (validate, grid, validate, grid, ...), one thread:
//
//   build/tests/services/trainer/validation_grid_bench [--preset tiny] [--base FILE.safetensors]
//       [--prompts 100] [--steps 10] [--grid-prompts 8] [--grid-seeds 4] [--reps 5]
//
// Prints JSON: per repetition the wall and thread-CPU seconds of validate() and of the grid
// (extra seeds sampled and scored; layout, PNG encoding and files), and the medians of the
// grid/validation ratios. Thread CPU time is less disturbed by other processes than wall time.
// Not a test; run by hand.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>
#include <time.h>

#include "common/model/safetensors.hpp"
#include "services/trainer/grpo_trainer.hpp"
#include "services/trainer/validation_grid.hpp"

namespace {

using namespace spotlight;

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// Scoring is done by the task scorer inside validate() and the grid; the trainer's reward is
// not used by either.
class NoReward final : public reward::RewardFunction {
 public:
  std::vector<reward::Scored> score(const std::vector<task::Prompt>& prompts,
                                    const std::vector<task::Image>&) override {
    return std::vector<reward::Scored>(prompts.size());
  }
  std::string name() const override { return "none"; }
};

}  // namespace

int main(int argc, char** argv) {
  std::string preset = "tiny", base;
  int prompts = 100, steps = 10, grid_prompts = 8, grid_seeds = 4, reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--preset")
      preset = v;
    else if (a == "--base")
      base = v;
    else if (a == "--prompts")
      prompts = std::stoi(v);
    else if (a == "--steps")
      steps = std::stoi(v);
    else if (a == "--grid-prompts")
      grid_prompts = std::stoi(v);
    else if (a == "--grid-seeds")
      grid_seeds = std::stoi(v);
    else if (a == "--reps")
      reps = std::stoi(v);
    else {
      std::cerr << "unknown option " << a << "\n";
      return 2;
    }
  }
  at::set_num_threads(1);
  policy::Policy policy(policy::PolicyOptions{preset, "cpu", "float32", 0});
  if (!base.empty()) model::load_module_state(*policy.model(), model::load_safetensors(base));
  trainer::GrpoOptions o;
  o.validation_prompts = prompts;
  o.validation_steps = steps;
  o.validation_images = grid_prompts;
  NoReward reward;
  trainer::GrpoTrainer validator(o, policy, reward, trainer::make_random_seed_source({}));
  trainer::ValidationGridOptions g;
  g.dir = std::filesystem::temp_directory_path() / "validation_grid_bench";
  g.prompts = grid_prompts;
  g.seeds = grid_seeds;
  g.steps = steps;
  trainer::ValidationGridWriter writer(g, policy);

  nlohmann::json runs = nlohmann::json::array();
  std::vector<double> wall_ratio, cpu_ratio;
  for (int r = 0; r < reps; ++r) {
    double wall = wall_seconds(), cpu = thread_cpu_seconds();
    const auto report = validator.validate();
    const double validate_wall = wall_seconds() - wall, validate_cpu = thread_cpu_seconds() - cpu;
    wall = wall_seconds();
    cpu = thread_cpu_seconds();
    const auto record = writer.write(r, report);
    const double grid_wall = wall_seconds() - wall, grid_cpu = thread_cpu_seconds() - cpu;
    wall_ratio.push_back(grid_wall / validate_wall);
    cpu_ratio.push_back(grid_cpu / validate_cpu);
    runs.push_back({{"validate_wall_s", validate_wall},
                    {"validate_cpu_s", validate_cpu},
                    {"grid_wall_s", grid_wall},
                    {"grid_cpu_s", grid_cpu},
                    {"grid_sample_wall_s", record.sample_seconds},
                    {"grid_draw_wall_s", record.draw_seconds},
                    {"png_bytes", record.bytes}});
  }
  std::filesystem::remove_all(g.dir);
  const nlohmann::json out{{"preset", preset},
                           {"validation_prompts", prompts},
                           {"steps", steps},
                           {"grid_prompts", grid_prompts},
                           {"grid_seeds", grid_seeds},
                           {"extra_samples_per_validation", grid_prompts * (grid_seeds - 1)},
                           {"runs", runs},
                           {"median_grid_over_validation_wall", median(wall_ratio)},
                           {"median_grid_over_validation_thread_cpu", median(cpu_ratio)}};
  std::cout << out.dump(2) << std::endl;
  return 0;
}
