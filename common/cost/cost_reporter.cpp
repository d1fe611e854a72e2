#include "common/cost/cost_reporter.hpp"

#include <cmath>

#include "common/run/run_keys.hpp"

namespace spotlight::cost {

std::string ledger_key(DeviceClass device_class, bool busy) {
  return run::RunKeys::cost_ledger(to_string(device_class), busy);
}

CostReporter::CostReporter(const CostMeter& meter, metrics::Registry* registry,
                           store::KeyValueStore* ledger)
    : meter_(meter), ledger_(ledger) {
  if (!registry) return;
  const std::string prefix = "spotlight_" + registry->service();
  const std::string cls(to_string(meter.device_class()));
  const std::string help = "Device-seconds this process held, by device class and state.";
  busy_seconds_ = registry->counter(prefix + "_device_seconds_total", help,
                                    {{"class", cls}, {"state", "busy"}});
  idle_seconds_ = registry->counter(prefix + "_device_seconds_total", help,
                                    {{"class", cls}, {"state", "idle"}});
  cost_ = registry->counter(prefix + "_cost_total",
                            "Cost of the devices this process held so far (cost.* prices).");
}

void CostReporter::flush() {
  const Usage u = meter_.usage();
  // Counters never go down: a busy share that shrank (a later report) shows as idle only.
  if (u.busy_device_seconds > counted_busy_) {
    busy_seconds_.inc(u.busy_device_seconds - counted_busy_);
    counted_busy_ = u.busy_device_seconds;
  }
  if (u.idle_device_seconds > counted_idle_) {
    idle_seconds_.inc(u.idle_device_seconds - counted_idle_);
    counted_idle_ = u.idle_device_seconds;
  }
  if (u.cost > counted_cost_) {
    cost_.inc(u.cost - counted_cost_);
    counted_cost_ = u.cost;
  }
  if (!ledger_) return;
  const auto busy_ms = static_cast<std::int64_t>(std::llround(u.busy_device_seconds * 1000.0));
  const auto idle_ms = static_cast<std::int64_t>(std::llround(u.idle_device_seconds * 1000.0));
  if (busy_ms > ledger_busy_ms_) {
    ledger_->add(ledger_key(u.device_class, true), busy_ms - ledger_busy_ms_);
    ledger_busy_ms_ = busy_ms;
  }
  if (idle_ms > ledger_idle_ms_) {
    ledger_->add(ledger_key(u.device_class, false), idle_ms - ledger_idle_ms_);
    ledger_idle_ms_ = idle_ms;
  }
}

RunCost read_run_cost(store::KeyValueStore& ledger, const Prices& prices) {
  RunCost r;
  const auto seconds = [&](DeviceClass c, bool busy) {
    return static_cast<double>(ledger.counter(ledger_key(c, busy))) / 1000.0;
  };
  r.reserved_busy_device_seconds = seconds(DeviceClass::kReserved, true);
  r.reserved_idle_device_seconds = seconds(DeviceClass::kReserved, false);
  r.spot_busy_device_seconds = seconds(DeviceClass::kSpot, true);
  r.spot_idle_device_seconds = seconds(DeviceClass::kSpot, false);
  r.reserved_cost = (r.reserved_busy_device_seconds + r.reserved_idle_device_seconds) *
                    prices.per_hour(DeviceClass::kReserved) / 3600.0;
  r.spot_cost = (r.spot_busy_device_seconds + r.spot_idle_device_seconds) *
                prices.per_hour(DeviceClass::kSpot) / 3600.0;
  return r;
}

RunCost run_cost_of(const Usage& u, const Prices& prices) {
  RunCost r;
  const double cost =
      (u.busy_device_seconds + u.idle_device_seconds) * prices.per_hour(u.device_class) / 3600.0;
  if (u.device_class == DeviceClass::kSpot) {
    r.spot_busy_device_seconds = u.busy_device_seconds;
    r.spot_idle_device_seconds = u.idle_device_seconds;
    r.spot_cost = cost;
  } else {
    r.reserved_busy_device_seconds = u.busy_device_seconds;
    r.reserved_idle_device_seconds = u.idle_device_seconds;
    r.reserved_cost = cost;
  }
  return r;
}

}  // namespace spotlight::cost
