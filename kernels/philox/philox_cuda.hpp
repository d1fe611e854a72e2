#pragma once
// The CUDA twin of philox_normal_cpu (philox.hpp): the same floats for the same (seed, step,
// element), bit for bit, computed on an NVIDIA GPU. It needs only the CUDA runtime, not a
// CUDA-enabled LibTorch, and no CUDA header leaks from here.
//
// Built only where CMake found a CUDA compiler (target spotlight_kernels_cuda; the compile
// definition SPOTLIGHT_HAVE_CUDA_KERNELS is set on its users).

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace spotlight::kernels {

// A CUDA runtime call failed; the message names the call and CUDA's error string.
class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Why CUDA kernels cannot run in this process (no driver, no device), or nullopt when they can.
std::optional<std::string> cuda_unavailable_reason();

// The name of the current CUDA device ("NVIDIA H200"). Throws CudaError.
std::string cuda_device_name();

// Writes element i of stream (seeds[b], step) to out[b * per_sample + i] for every b and
// i < per_sample: the layout of seeded_normal (noise.hpp). `out` is device memory of at least
// seeds.size() * per_sample floats on the current device. The kernels are queued on `stream` (a
// cudaStream_t; nullptr: the default stream) and the call returns without waiting for them.
// Throws CudaError when a launch fails.
void philox_normal_cuda(const std::vector<uint64_t>& seeds, uint64_t step, int64_t per_sample,
                        float* out, void* stream = nullptr);

// The same into host memory, synchronously (tests and benchmarks): seeds.size() * per_sample
// floats. Throws CudaError.
std::vector<float> philox_normal_cuda_to_host(const std::vector<uint64_t>& seeds, uint64_t step,
                                              int64_t per_sample);

}  // namespace spotlight::kernels
