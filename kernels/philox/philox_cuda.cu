// The CUDA twin of philox_cpu.cpp. Compiled with -fmad=false (kernels/philox/CMakeLists.txt):
// philox_math.hpp's contract for bit-equality with the CPU reference.
#include <algorithm>
#include <string>

#include <cuda_runtime.h>

#include "kernels/philox/philox_cuda.hpp"
#include "kernels/philox/philox_math.hpp"

namespace spotlight::kernels {
namespace {

// Seeds travel as a kernel argument (no device allocation per call): launches take at most
// kSeedsPerLaunch samples each.
constexpr int kSeedsPerLaunch = 256;
constexpr int kThreads = 256;

struct LaunchSeeds {
  uint64_t seed[kSeedsPerLaunch];
};

// Thread (x) handles Philox block x (elements 4x .. 4x+3) of sample blockIdx.y.
__global__ void philox_normal_kernel(LaunchSeeds seeds, uint64_t step, int64_t per_sample,
                                     float* out) {
  const int64_t block = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t first = block * 4;
  if (first >= per_sample) return;
  float z[4];
  philox_math::normal_block(seeds.seed[blockIdx.y], step, static_cast<uint64_t>(block), z);
  float* row = out + static_cast<int64_t>(blockIdx.y) * per_sample;
  const int64_t count = per_sample - first < 4 ? per_sample - first : 4;
  for (int64_t lane = 0; lane < count; ++lane)
    row[first + lane] = z[lane];
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw CudaError(std::string("cuda: ") + what + ": " + cudaGetErrorString(status));
  }
}

}  // namespace

std::optional<std::string> cuda_unavailable_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    return std::string("cudaGetDeviceCount: ") + cudaGetErrorString(status);
  }
  if (count == 0) return std::string("no CUDA device");
  return std::nullopt;
}

std::string cuda_device_name() {
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
  return properties.name;
}

void philox_normal_cuda(const std::vector<uint64_t>& seeds, uint64_t step, int64_t per_sample,
                        float* out, void* stream) {
  if (seeds.empty() || per_sample <= 0) return;
  const int64_t blocks = (per_sample + 3) / 4;
  const auto grid_x = static_cast<unsigned>((blocks + kThreads - 1) / kThreads);
  auto* cuda_stream = static_cast<cudaStream_t>(stream);
  for (size_t begin = 0; begin < seeds.size(); begin += kSeedsPerLaunch) {
    const size_t count = std::min<size_t>(kSeedsPerLaunch, seeds.size() - begin);
    LaunchSeeds launch{};
    std::copy(seeds.begin() + begin, seeds.begin() + begin + count, launch.seed);
    philox_normal_kernel<<<dim3(grid_x, static_cast<unsigned>(count)), kThreads, 0, cuda_stream>>>(
        launch, step, per_sample, out + static_cast<int64_t>(begin) * per_sample);
    check(cudaGetLastError(), "philox_normal_kernel launch");
  }
}

std::vector<float> philox_normal_cuda_to_host(const std::vector<uint64_t>& seeds, uint64_t step,
                                              int64_t per_sample) {
  std::vector<float> host(seeds.size() * static_cast<size_t>(std::max<int64_t>(per_sample, 0)));
  if (host.empty()) return host;
  float* device = nullptr;
  check(cudaMalloc(&device, host.size() * sizeof(float)), "cudaMalloc");
  try {
    philox_normal_cuda(seeds, step, per_sample, device);
    check(cudaMemcpy(host.data(), device, host.size() * sizeof(float), cudaMemcpyDeviceToHost),
          "cudaMemcpy");
  } catch (...) {
    cudaFree(device);
    throw;
  }
  check(cudaFree(device), "cudaFree");
  return host;
}

}  // namespace spotlight::kernels
