#pragma once
// What compute costs (docs/algorithm.md): every service accounts the device-seconds it holds,
// busy or idle, by device class (reserved for the trainer, spot for explorers), and prices them
// from configuration (spot = spot_price_ratio x reserved). Idle time is paid for as well: a
// reserved GPU waiting for seeds costs what a busy one does.
//
//   usage(now).busy_device_seconds = devices * busy wall seconds (as the process reports them)
//   usage(now).idle_device_seconds = devices * (now - start) - busy_device_seconds
//   usage(now).cost                = (busy + idle device-seconds) * price(class) / 3600
//
// A process reports either its cumulative busy time (explorers: time spent sampling) or its
// cumulative idle time (the trainer: time spent waiting for explored seeds); the rest of the
// elapsed wall time is the other state. Thread-safe.

#include <chrono>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace spotlight::cost {

enum class DeviceClass { kReserved, kSpot };

std::string_view to_string(DeviceClass device_class);  // "reserved", "spot"
std::optional<DeviceClass> parse_device_class(std::string_view text);

inline constexpr double kDefaultReservedPricePerHour = 4.0;  // per device-hour, any currency
inline constexpr double kDefaultSpotPriceRatio = 0.27;       // 69-77% off; docs/algorithm.md

struct Prices {
  double reserved_per_hour = kDefaultReservedPricePerHour;  // cost.reserved_price_per_hour
  double spot_ratio = kDefaultSpotPriceRatio;               // cost.spot_price_ratio
  double per_hour(DeviceClass device_class) const;
  // Throws std::invalid_argument naming the first bad field.
  void validate() const;
};

struct Usage {
  DeviceClass device_class = DeviceClass::kReserved;
  double devices = 0;
  double busy_device_seconds = 0;
  double idle_device_seconds = 0;
  double cost = 0;
};

class CostMeter {
 public:
  using Clock = std::chrono::steady_clock;
  // Starts accounting at `start`. Throws std::invalid_argument for devices < 0 or bad prices.
  CostMeter(DeviceClass device_class, double devices, Prices prices,
            Clock::time_point start = Clock::now());

  // Cumulative busy (or idle) wall seconds of the process since start; the other state is the
  // remainder of the elapsed time. The last call of either kind wins; values are clamped into
  // [0, elapsed].
  void set_busy_seconds(double cumulative);
  void set_idle_seconds(double cumulative);

  Usage usage(Clock::time_point now = Clock::now()) const;
  DeviceClass device_class() const { return class_; }
  const Prices& prices() const { return prices_; }

 private:
  DeviceClass class_;
  double devices_;
  Prices prices_;
  Clock::time_point start_;
  mutable std::mutex mutex_;
  double reported_ = 0;
  bool reports_busy_ = true;
};

}  // namespace spotlight::cost
