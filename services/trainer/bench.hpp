#pragma once
// `spotlight-trainer bench`: how fast the compute core runs on this machine, as ratios against a
// peak measured in the same run.
//
//   matmul   an n x n x n matrix product in the dtype the DiT's matrix products use (bf16 under
//            autocast, else the parameters' dtype): this machine's peak through LibTorch
//   forward  one DiT forward of a batch: FLOP/s (2 x multiply-adds of matrix products) and its
//            share of the matmul peak
//   sampler  seeded SDE sampling of a batch: images/s and seconds per sample per step
//   grpo     (bench.grpo) two GRPO iterations with the trainer.* settings; the second one's time
//            split (rollout, reward, train). A stand-in reward (the images' mean brightness)
//            gives every group a spread, so every chunk is trained: the task's scorer gives an
//            untrained model 0 everywhere, and GRPO then trains nothing. An update costs the same
//            whatever the rewards.
//
// A model narrower (bench.hidden) or shallower (bench.depth) than its preset is measured as built;
// the report adds the full preset's forward time at the measured FLOP rate (its FLOPs divided by
// that rate): wide presets such as qwen-image-like need not be built whole. bench.image_size
// changes the latent size (so the image tokens) of the model measured and of that full preset.

#include <cstdint>
#include <filesystem>
#include <string>

#include "common/policy/policy_options.hpp"
#include "common/sampler/sampler_options.hpp"
#include "services/trainer/grpo_trainer.hpp"

namespace spotlight::trainer {

struct BenchOptions {
  policy::PolicyOptions policy;  // preset, device, dtype, autocast, init_seed
  std::filesystem::path base;    // weights to load (the preset's shape only); empty: fresh
  int64_t hidden = 0;            // 0: the preset's width; else this width, same head size
  int64_t depth = 0;             // 0: the preset's joint blocks; else this many
  int64_t image_size = 0;        // 0: the preset's latent size; else this (a multiple of its patch)
  int64_t batch = 64;            // samples per forward and per sampler batch
  double seconds = 2.0;          // at least this long (and 3 repetitions) per measurement
  int64_t matmul_size = 0;       // 0: 8192 on CUDA, 1024 on the CPU
  bool sampler = true;           // also measure the sampler
  sampler::SamplerOptions sampling;
  bool grpo = false;  // also time GRPO iterations (the preset's shape only)
  GrpoOptions grpo_options;
};

struct BenchReport {
  std::string device, dtype, autocast, torch_version;
  int threads = 0;
  // matmul
  std::string matmul_dtype;
  int64_t matmul_size = 0;
  double matmul_tflops = 0;
  // model as built, and its preset
  std::string preset;
  int64_t hidden = 0, heads = 0, depth = 0, preset_depth = 0, image_tokens = 0, text_tokens = 0;
  int64_t macs_per_sample = 0;         // as built
  int64_t preset_macs_per_sample = 0;  // the preset's depth at the built width
  // forward
  int64_t batch = 0;
  double forward_seconds = 0;  // one forward of the batch
  double forward_tflops = 0;
  double forward_share_of_matmul = 0;
  double preset_forward_seconds_per_sample = 0;  // preset depth, at the measured FLOP rate
  // sampler (0 when not measured)
  int sampler_steps = 0;
  double sampler_images_per_second = 0;
  double sampler_seconds_per_sample_step = 0;
  // grpo (when measured): the second iteration
  bool grpo = false;
  int grpo_samples = 0, grpo_steps = 0, grpo_optimizer_steps = 0;
  double grpo_rollout_seconds = 0, grpo_reward_seconds = 0, grpo_train_seconds = 0;
  double grpo_iteration_seconds = 0;
};

// Throws std::invalid_argument for a width that the head size does not divide, or a base
// checkpoint or GRPO timing with a changed shape.
BenchReport run_benchmark(const BenchOptions& options);

// The report as a JSON object (pretty-printed).
std::string to_json(const BenchReport& report);

}  // namespace spotlight::trainer
