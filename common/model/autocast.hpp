#pragma once
// Mixed precision for the DiT forward: inside an AutocastGuard, LibTorch's autocast runs matrix
// products (linear, matmul) in a lower-precision dtype (bf16) on the guard's device type while
// parameters, the residual stream and everything outside the guard stay fp32. The sampler's steps
// and log-probabilities run outside it (DESIGN.md section 2's formulas need fp32).
//
// The guard hides a LibTorch API difference: 1.13 has per-device calls (set_cpu_enabled,
// set_autocast_cpu_dtype, ...), 2.4 and later set_autocast_enabled(device_type, on) and
// set_autocast_dtype(device_type, dtype).
//
//   AutocastGuard guard(x.device().type(), at::kBFloat16);   // nullopt: does nothing
//   ... ops here autocast ...
//   // at exit: the previous enabled state and dtype are restored, and the cast cache is cleared
//   // when this was the outermost autocast region of the thread.
//
// Autocast state is per thread; a guard must be destroyed on the thread that made it.

#include <optional>
#include <string>

#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

namespace spotlight::model {

// "none" -> nullopt, "bfloat16" -> kBFloat16; anything else throws std::invalid_argument.
std::optional<c10::ScalarType> parse_autocast(const std::string& name);

class AutocastGuard {
 public:
  // Only CPU and CUDA devices autocast; other device types throw std::invalid_argument.
  AutocastGuard(c10::DeviceType device, std::optional<c10::ScalarType> dtype);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool active_ = false;
  c10::DeviceType device_ = c10::DeviceType::CPU;
  bool was_enabled_ = false;
  c10::ScalarType previous_dtype_ = c10::ScalarType::Undefined;
};

}  // namespace spotlight::model
