#pragma once
// Publishes a CostMeter: Prometheus counters of the service
//   spotlight_<service>_device_seconds_total{class="reserved|spot", state="busy|idle"}
//   spotlight_<service>_cost_total
// and the run's ledger in Redis, shared by every process of the run (integer milliseconds,
// relative keys of the run's KeyValueStore, summed with atomic add()):
//   cost:<class>:busy_ms, cost:<class>:idle_ms
// flush() adds what accrued since the previous flush, so the ledger holds the sum over processes
// of what each flushed; a process that dies loses at most its last unflushed interval.
// Thread-compatible: one thread flushes (the meter itself is thread-safe).

#include <memory>
#include <string>

#include "common/cost/cost.hpp"
#include "common/metrics/metrics.hpp"
#include "common/store/key_value_store.hpp"

namespace spotlight::cost {

// Relative ledger keys.
std::string ledger_key(DeviceClass device_class, bool busy);

class CostReporter {
 public:
  // `registry` and `ledger` may be null (no metrics, no Redis). Both must outlive the reporter.
  CostReporter(const CostMeter& meter, metrics::Registry* registry, store::KeyValueStore* ledger);

  // Adds the increments since the last flush. Throws what the ledger throws
  // (store::StoreUnavailable ...); the increment is then retried by the next flush.
  void flush();

 private:
  const CostMeter& meter_;
  store::KeyValueStore* ledger_;
  metrics::Counter busy_seconds_, idle_seconds_, cost_;
  double counted_busy_ = 0, counted_idle_ = 0, counted_cost_ = 0;  // in the counters
  std::int64_t ledger_busy_ms_ = 0, ledger_idle_ms_ = 0;           // in the ledger
};

// The run's totals from the ledger, priced.
struct RunCost {
  double reserved_busy_device_seconds = 0, reserved_idle_device_seconds = 0;
  double spot_busy_device_seconds = 0, spot_idle_device_seconds = 0;
  double reserved_cost = 0, spot_cost = 0;
  double total() const { return reserved_cost + spot_cost; }
};
RunCost read_run_cost(store::KeyValueStore& ledger, const Prices& prices);
// The same from one process's usage alone (a run without Redis).
RunCost run_cost_of(const Usage& usage, const Prices& prices);

}  // namespace spotlight::cost
