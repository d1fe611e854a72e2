// Cost of scoring one image (it runs for every sample): score() per category at 32x32.
#include <benchmark/benchmark.h>

#include "common/task/task.hpp"
#include "tests/common/task/image_ops.hpp"

namespace spotlight::task {
namespace {

void BM_Score(benchmark::State& state) {
  const TaskOptions options;
  const PromptGenerator generator(options);
  const Category category = kCategories[state.range(0)];
  std::vector<Prompt> prompts;
  std::vector<Image> images;
  for (uint64_t seed = 0; seed < 64; ++seed) {
    const auto& pool = generator.training_prompts(category);
    prompts.push_back(pool[seed * 7919 % pool.size()]);
    images.push_back(
        testing::add_noise(testing::box_blur(render(prompts.back(), seed, options)), 0.05f, seed));
  }
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(score(prompts[i % 64], images[i % 64], options));
    ++i;
  }
  state.SetLabel(std::string(name(category)));
}
BENCHMARK(BM_Score)->DenseRange(0, 4);

void BM_Render(benchmark::State& state) {
  const TaskOptions options;
  const PromptGenerator generator(options);
  uint64_t seed = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(render(generator.sample(seed), seed, options));
    ++seed;
  }
}
BENCHMARK(BM_Render);

void BM_Sample(benchmark::State& state) {
  const PromptGenerator generator;
  uint64_t seed = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(generator.sample(seed++));
  }
}
BENCHMARK(BM_Sample);

}  // namespace
}  // namespace spotlight::task

BENCHMARK_MAIN();
