#include "common/run/cost_section.hpp"

namespace spotlight::run {

using config::Entry;

const config::Schema& cost_schema() {
  static const config::Schema schema{
      Entry::real("cost.reserved_price_per_hour", 4.0,
                  "Price of one reserved device-hour (the trainer's class).")
          .at_least(0),
      Entry::real("cost.spot_price_ratio", 0.27,
                  "Spot price as a share of the reserved price (explorers' class).")
          .at_least(0),
      Entry::real("cost.devices", 0,
                  "Devices this process holds, for cost accounting (0: run.threads when set, "
                  "else 1).")
          .at_least(0),
  };
  return schema;
}

}  // namespace spotlight::run
