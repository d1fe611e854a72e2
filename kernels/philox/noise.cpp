#include "kernels/philox/noise.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "kernels/philox/philox.hpp"

// With a CUDA-enabled LibTorch, noise for CUDA tensors is drawn on the device by the CUDA twin
// (the same floats), on LibTorch's current stream.
#if defined(SPOTLIGHT_WITH_CUDA) && defined(SPOTLIGHT_HAVE_CUDA_KERNELS)
#define SPOTLIGHT_NOISE_ON_DEVICE 1
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "kernels/philox/philox_cuda.hpp"
#endif

namespace spotlight::kernels {

at::Tensor seeded_normal(const std::vector<uint64_t>& seeds, uint64_t step,
                         c10::IntArrayRef sample_shape, const c10::TensorOptions& options) {
  std::vector<int64_t> shape{static_cast<int64_t>(seeds.size())};
  shape.insert(shape.end(), sample_shape.begin(), sample_shape.end());
#ifdef SPOTLIGHT_NOISE_ON_DEVICE
  if (options.device().is_cuda()) {
    const c10::cuda::CUDAGuard guard(options.device());
    at::Tensor out = at::empty(shape, options.dtype(at::kFloat));
    const int64_t per_sample = seeds.empty() ? 0 : out.numel() / static_cast<int64_t>(seeds.size());
    philox_normal_cuda(seeds, step, per_sample, out.data_ptr<float>(),
                       c10::cuda::getCurrentCUDAStream().stream());
    return out.to(options.dtype().toScalarType());
  }
#endif
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
