#include "common/model/autocast.hpp"

#include <stdexcept>

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define SPOTLIGHT_AUTOCAST_BY_DEVICE_TYPE 1
#endif

namespace spotlight::model {
namespace {

bool is_enabled(c10::DeviceType device) {
#ifdef SPOTLIGHT_AUTOCAST_BY_DEVICE_TYPE
  return at::autocast::is_autocast_enabled(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::is_enabled()
                                         : at::autocast::is_cpu_enabled();
#endif
}

void set_enabled(c10::DeviceType device, bool enabled) {
#ifdef SPOTLIGHT_AUTOCAST_BY_DEVICE_TYPE
  at::autocast::set_autocast_enabled(device, enabled);
#else
  if (device == c10::DeviceType::CUDA) {
    at::autocast::set_enabled(enabled);
  } else {
    at::autocast::set_cpu_enabled(enabled);
  }
#endif
}

c10::ScalarType get_dtype(c10::DeviceType device) {
#ifdef SPOTLIGHT_AUTOCAST_BY_DEVICE_TYPE
  return at::autocast::get_autocast_dtype(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype()
                                         : at::autocast::get_autocast_cpu_dtype();
#endif
}

void set_dtype(c10::DeviceType device, c10::ScalarType dtype) {
#ifdef SPOTLIGHT_AUTOCAST_BY_DEVICE_TYPE
  at::autocast::set_autocast_dtype(device, dtype);
#else
  if (device == c10::DeviceType::CUDA) {
    at::autocast::set_autocast_gpu_dtype(dtype);
  } else {
    at::autocast::set_autocast_cpu_dtype(dtype);
  }
#endif
}

}  // namespace

std::optional<c10::ScalarType> parse_autocast(const std::string& name) {
  if (name == "none") return std::nullopt;
  if (name == "bfloat16") return c10::ScalarType::BFloat16;
  throw std::invalid_argument("model: unknown autocast '" + name + "' (none or bfloat16)");
}

AutocastGuard::AutocastGuard(c10::DeviceType device, std::optional<c10::ScalarType> dtype)
    : device_(device) {
  if (!dtype) return;
  if (device != c10::DeviceType::CPU && device != c10::DeviceType::CUDA) {
    throw std::invalid_argument("model: autocast on CPU and CUDA devices only");
  }
  was_enabled_ = is_enabled(device);
  previous_dtype_ = get_dtype(device);
  set_enabled(device, true);
  set_dtype(device, *dtype);
  at::autocast::increment_nesting();
  active_ = true;
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  // As Python's torch.autocast: the weight casts cached inside the outermost region are dropped.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_enabled(device_, was_enabled_);
  set_dtype(device_, previous_dtype_);
}

}  // namespace spotlight::model
