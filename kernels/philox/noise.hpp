#pragma once
// Seeded noise tensors for a batch of samples: row b is stream (seeds[b], step) laid out over the
// sample's elements in row-major order. Computed on the CPU and moved to `options`' device; for
// CUDA devices in builds with SPOTLIGHT_WITH_CUDA, computed on the device by the CUDA twin (the
// same floats, queued on LibTorch's current stream).

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/TensorOptions.h>

namespace spotlight::kernels {

at::Tensor seeded_normal(const std::vector<uint64_t>& seeds, uint64_t step,
                         c10::IntArrayRef sample_shape, const c10::TensorOptions& options);

}  // namespace spotlight::kernels
