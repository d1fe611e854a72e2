#include "common/cost/cost.hpp"

#include <algorithm>
#include <cmath>

namespace spotlight::cost {

std::string_view to_string(DeviceClass device_class) {
  return device_class == DeviceClass::kSpot ? "spot" : "reserved";
}

std::optional<DeviceClass> parse_device_class(std::string_view text) {
  if (text == "reserved") return DeviceClass::kReserved;
  if (text == "spot") return DeviceClass::kSpot;
  return std::nullopt;
}

double Prices::per_hour(DeviceClass device_class) const {
  return device_class == DeviceClass::kSpot ? reserved_per_hour * spot_ratio : reserved_per_hour;
}

void Prices::validate() const {
  if (!(reserved_per_hour >= 0) || !std::isfinite(reserved_per_hour)) {
    throw std::invalid_argument("Prices.reserved_per_hour: must be a finite number >= 0");
  }
  if (!(spot_ratio >= 0) || !std::isfinite(spot_ratio)) {
    throw std::invalid_argument("Prices.spot_ratio: must be a finite number >= 0");
  }
}

CostMeter::CostMeter(DeviceClass device_class, double devices, Prices prices,
                     Clock::time_point start)
    : class_(device_class), devices_(devices), prices_(prices), start_(start) {
  if (!(devices >= 0) || !std::isfinite(devices)) {
    throw std::invalid_argument("CostMeter: devices must be a finite number >= 0");
  }
  prices_.validate();
}

void CostMeter::set_busy_seconds(double cumulative) {
  std::lock_guard lock(mutex_);
  reported_ = cumulative;
  reports_busy_ = true;
}

void CostMeter::set_idle_seconds(double cumulative) {
  std::lock_guard lock(mutex_);
  reported_ = cumulative;
  reports_busy_ = false;
}

Usage CostMeter::usage(Clock::time_point now) const {
  const double elapsed = std::max(0.0, std::chrono::duration<double>(now - start_).count());
  double reported = 0;
  bool busy = true;
  {
    std::lock_guard lock(mutex_);
    reported = std::clamp(reported_, 0.0, elapsed);
    busy = reports_busy_;
  }
  Usage u;
  u.device_class = class_;
  u.devices = devices_;
  u.busy_device_seconds = devices_ * (busy ? reported : elapsed - reported);
  u.idle_device_seconds = devices_ * elapsed - u.busy_device_seconds;
  u.cost = devices_ * elapsed * prices_.per_hour(class_) / 3600.0;
  return u;
}

}  // namespace spotlight::cost
