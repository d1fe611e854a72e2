// The compute core on a CUDA device against the CPU (label gpu): seeded noise bit for bit, the DiT
// forward and a sampled trajectory within float tolerance, and bf16 autocast's effect on the
// log-probabilities as on the CPU. Skips, saying why, where LibTorch sees no CUDA device (a
// CPU-only LibTorch, or no GPU).
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>
#include <torch/version.h>

#include "common/sampler/flow_step.hpp"
#include "common/sampler/sampler.hpp"
#include "kernels/philox/noise.hpp"
#include "tests/common/sampler/sampler_fixtures.hpp"

namespace spotlight::sampler {
namespace {

using test::perturbed_model;
using test::tokens;

#define SKIP_WITHOUT_CUDA()                                                           \
  if (!torch::cuda::is_available())                                                   \
  GTEST_SKIP() << "LibTorch " << TORCH_VERSION << " sees no CUDA device (a CPU-only " \
               << "LibTorch, or no GPU): nothing to compare"

double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(torch::kCPU, torch::kDouble) - b.to(torch::kCPU, torch::kDouble))
      .abs()
      .max()
      .item<double>();
}

TEST(SamplerCuda, SeededNoiseIsBitEqualToTheCpus) {
  SKIP_WITHOUT_CUDA();
  const std::vector<uint64_t> seeds{0, 7, 0xFFFFFFFFFFFFFFFFull};
  for (uint64_t step : {0, 1, 9}) {
    const auto cpu = kernels::seeded_normal(seeds, step, {3, 32, 32}, torch::kFloat);
    const auto gpu = kernels::seeded_normal(seeds, step, {3, 32, 32},
                                            torch::TensorOptions().device(torch::kCUDA));
    ASSERT_TRUE(gpu.is_cuda());
    EXPECT_TRUE(torch::equal(cpu, gpu.cpu())) << "step " << step;
  }
}

TEST(SamplerCuda, ForwardAndTrajectoryMatchTheCpuWithinTolerance) {
  SKIP_WITHOUT_CUDA();
  auto cpu_model = perturbed_model(7);
  auto gpu_model = perturbed_model(7);
  gpu_model->to(torch::kCUDA);
  cpu_model->eval();
  gpu_model->eval();
  torch::NoGradGuard no_grad;
  const auto x = torch::randn({4, 3, 32, 32});
  const auto t = torch::full({4}, 0.6);
  const auto v_cpu = cpu_model->forward(x, t, tokens(4));
  const auto v_gpu = gpu_model->forward(x.cuda(), t.cuda(), tokens(4).cuda());
  EXPECT_LT(max_abs_diff(v_cpu, v_gpu), 1e-4);

  SamplerOptions options;
  options.steps = 6;
  options.keep_trajectory = true;
  const auto a = sample(cpu_model, tokens(4), {1, 2, 3, 4}, options);
  const auto b = sample(gpu_model, tokens(4).cuda(), {1, 2, 3, 4}, options);
  ASSERT_TRUE(b.latents.is_cuda());
  EXPECT_TRUE(torch::equal(a.latents.select(1, 0), b.latents.select(1, 0).cpu()))
      << "the initial latents are the seeds' noise on both";
  EXPECT_LT(max_abs_diff(a.latents, b.latents), 1e-3);
  EXPECT_LT(max_abs_diff(a.log_probs, b.log_probs), 1e-3);
}

TEST(SamplerCuda, Bf16AutocastKeepsLogProbabilitiesWithinTolerance) {
  SKIP_WITHOUT_CUDA();
  auto model = perturbed_model(3);
  model->to(torch::kCUDA);
  model->eval();
  SamplerOptions options;
  options.steps = 6;
  options.keep_trajectory = true;
  const auto token_batch = tokens(4).cuda();
  const auto rollout = sample(model, token_batch, {11, 12, 13, 14}, options);
  const auto grid = time_grid(options.steps, options.shift);
  const auto recompute = [&] {
    torch::NoGradGuard no_grad;
    std::vector<at::Tensor> out;
    for (int j = 0; j < options.steps; ++j) {
      const auto x = rollout.latents.select(1, j);
      const auto c = sde_coefficients(grid[j], grid[j + 1], options.noise_level, grid[1]);
      const auto v = model->forward(x, torch::full({4}, grid[j], x.options()), token_batch);
      out.push_back(sde_log_prob(rollout.latents.select(1, j + 1), sde_mean(x, v, c), c));
    }
    return torch::stack(out, 1);
  };
  const auto fp32 = recompute();
  model->set_autocast(at::kBFloat16);
  const auto bf16 = recompute();
  model->set_autocast(std::nullopt);
  ASSERT_EQ(bf16.scalar_type(), at::kFloat);
  const double deviation = max_abs_diff(fp32, bf16);
  std::cout << "[ measured ] CUDA bf16 autocast: max |log p deviation| " << deviation << "\n";
  EXPECT_GT(deviation, 0.0) << "autocast did not engage on CUDA";
  EXPECT_LT(deviation, 1e-3);
}

}  // namespace
}  // namespace spotlight::sampler
