// The cost of the TorchScript path: the built-in MMDiT of a preset against its TorchScript twin
// (same architecture, same weights; tests/common/policy/twin.hpp), in one process, interleaved:
//   sampler  images/s of the SDE sampler (policy.sample, `--steps` steps, batch `--batch`)
//   train    seconds of one trained step of a micro-batch: velocity, SDE mean, log-prob, a
//            clipped-ratio loss and backward, as GrpoTrainer does per step (the conditioning is
//            precomputed for both, so the native text encoder is not timed)
// Prints JSON with per-round times and the median ratio scripted / native (> 1: TorchScript is
// slower). Usage: torchscript_bench [--preset tiny] [--batch 16] [--steps 10] [--rounds 5]
//                 [--threads 1]
#include <algorithm>
#include <chrono>
#include <iostream>
#include <numeric>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "common/rl/grpo_loss.hpp"
#include "common/sampler/flow_step.hpp"
#include "tests/common/policy/twin.hpp"
#include "tests/support/process.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using namespace spotlight;

double seconds_of(const std::function<void()>& fn) {
  const auto start = Clock::now();
  fn();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  std::string preset = "tiny";
  int batch = 16, steps = 10, rounds = 5, threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--preset")
      preset = value;
    else if (key == "--batch")
      batch = std::stoi(value);
    else if (key == "--steps")
      steps = std::stoi(value);
    else if (key == "--rounds")
      rounds = std::stoi(value);
    else if (key == "--threads")
      threads = std::stoi(value);
    else {
      std::cerr << "unknown option " << key << "\n";
      return 2;
    }
  }
  torch::set_num_threads(threads);
  const auto dir = testing::make_temp_dir("spotlight-ts-bench");
  auto twin = testing::make_twin(preset, dir, batch);
  std::vector<uint64_t> seeds(batch);
  std::iota(seeds.begin(), seeds.end(), 1);
  sampler::SamplerOptions sde;
  sde.steps = steps;
  sde.keep_trajectory = true;

  struct Side {
    const char* name;
    policy::Policy* policy;
    const std::vector<task::Prompt>* prompts;
    std::vector<double> sample_seconds, train_seconds;
    sampler::Trajectory trajectory;
    sampler::Conditioning condition;  // precomputed: the native text encoder is not timed
  };
  std::vector<Side> sides{{"native", twin.native.get(), &twin.prompts, {}, {}, {}, {}},
                          {"torchscript", twin.scripted.get(), &twin.free_prompts, {}, {}, {}, {}}};
  for (auto& s : sides) {
    torch::NoGradGuard no_grad;
    s.condition = s.policy->condition(*s.prompts);
  }
  const auto grid = sampler::time_grid(steps);
  const int j = steps / 2;
  const auto c = sampler::sde_coefficients(grid[j], grid[j + 1], sde.noise_level, grid[1]);
  auto advantages = torch::linspace(-1.0, 1.0, batch);
  const auto train_step = [&](Side& s) {
    auto& p = *s.policy;
    p.set_training(true);
    auto x = s.trajectory.latents.select(1, j);
    auto x_next = s.trajectory.latents.select(1, j + 1);
    auto t = torch::full({batch}, grid[j]);
    auto mean = sampler::sde_mean(x, p.velocity(x, t, s.condition), c);
    auto logp = sampler::sde_log_prob(x_next, mean, c);
    auto terms = rl::grpo_loss(logp, s.trajectory.log_probs.select(1, j), advantages, mean, {},
                               c.std_dev, rl::GrpoLossOptions{});
    terms.loss.backward();
    for (auto& param : p.trainable_parameters())
      param.mutable_grad().reset();
    p.set_training(false);
  };
  // Warm-up: TorchScript's profiling executor optimises its graph over the first runs.
  for (auto& s : sides) {
    s.trajectory = s.policy->sample(*s.prompts, seeds, sde, batch).front();
    for (int w = 0; w < 3; ++w)
      train_step(s);
  }
  for (int r = 0; r < rounds; ++r) {
    for (auto& s : sides) {
      s.sample_seconds.push_back(seconds_of(
          [&] { s.trajectory = s.policy->sample(*s.prompts, seeds, sde, batch).front(); }));
      s.train_seconds.push_back(seconds_of([&] { train_step(s); }));
    }
  }
  std::vector<double> sample_ratio, train_ratio;
  for (int r = 0; r < rounds; ++r) {
    sample_ratio.push_back(sides[1].sample_seconds[r] / sides[0].sample_seconds[r]);
    train_ratio.push_back(sides[1].train_seconds[r] / sides[0].train_seconds[r]);
  }
  nlohmann::json out{{"preset", preset},
                     {"batch", batch},
                     {"sampler_steps", steps},
                     {"threads", threads},
                     {"rounds", rounds}};
  for (auto& s : sides) {
    out[s.name] = {{"sampler_images_per_second", batch / median(s.sample_seconds)},
                   {"train_step_seconds", median(s.train_seconds)},
                   {"sample_seconds", s.sample_seconds},
                   {"train_seconds", s.train_seconds}};
  }
  out["torchscript_over_native_sampler_time"] = median(sample_ratio);
  out["torchscript_over_native_train_step_time"] = median(train_ratio);
  std::cout << out.dump(2) << std::endl;
  std::filesystem::remove_all(dir);
  return 0;
}
