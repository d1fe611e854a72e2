#include "common/cost/cost_config.hpp"

namespace spotlight::cost {

Prices prices_from(const config::Config& c) {
  Prices p;
  p.reserved_per_hour = c.get_double("cost.reserved_price_per_hour");
  p.spot_ratio = c.get_double("cost.spot_price_ratio");
  return p;
}

double devices_from(const config::Config& c) {
  if (const double d = c.get_double("cost.devices"); d > 0) return d;
  if (const auto threads = c.get_int("run.threads"); threads > 0)
    return static_cast<double>(threads);
  return 1.0;
}

}  // namespace spotlight::cost
