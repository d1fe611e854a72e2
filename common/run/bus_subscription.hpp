#pragma once
// How the planner and explorers follow the trainer's bus (run configuration keys bus.*).

#include <optional>
#include <string>

#include "common/bus/follower_thread.hpp"
#include "common/bus/subscriber.hpp"
#include "common/config/config.hpp"

namespace spotlight::run {

struct BusSubscription {
  std::string endpoint;
  bus::SubscriberOptions subscriber;
  bus::FollowerThreadOptions follower;
};

// The endpoint (bus.subscribe_endpoint, else bus.trainer_endpoint), the subscriber's frame limit
// and CURVE client keys, the recovery period (bus.resync_ms). std::nullopt when bus.subscribe is
// false or there is no endpoint. Throws config::ConfigError naming an unusable key file.
std::optional<BusSubscription> bus_subscription(const config::Config& config);

}  // namespace spotlight::run
