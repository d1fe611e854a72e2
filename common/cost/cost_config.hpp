#pragma once
// The cost.* keys of the run configuration (common/run's run_schema()):
//   cost.reserved_price_per_hour, cost.spot_price_ratio -> Prices
//   cost.devices: devices this process holds (0: run.threads when set, else 1)

#include "common/config/config.hpp"
#include "common/cost/cost.hpp"

namespace spotlight::cost {

Prices prices_from(const config::Config& config);
double devices_from(const config::Config& config);

}  // namespace spotlight::cost
