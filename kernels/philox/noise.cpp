#include "kernels/philox/noise.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "kernels/philox/philox.hpp"

namespace spotlight::kernels {

at::Tensor seeded_normal(const std::vector<uint64_t>& seeds, uint64_t step,
                         c10::IntArrayRef sample_shape, const c10::TensorOptions& options) {
  std::vector<int64_t> shape{static_cast<int64_t>(seeds.size())};
  shape.insert(shape.end(), sample_shape.begin(), sample_shape.end());
  at::Tensor cpu = at::empty(shape, at::TensorOptions().dtype(at::kFloat));
  const int64_t per_sample = seeds.empty() ? 0 : cpu.numel() / static_cast<int64_t>(seeds.size());
  float* data = cpu.data_ptr<float>();
  at::parallel_for(0, static_cast<int64_t>(seeds.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      philox_normal_cpu(seeds[b], step, 0, per_sample, data + b * per_sample);
    }
  });
  return cpu.to(options);
}

}  // namespace spotlight::kernels
