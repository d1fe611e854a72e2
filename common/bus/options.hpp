#pragma once
// Options shared by the bus sockets (the limits every socket shares: common/zmq/options.hpp).

#include <chrono>
#include <cstdint>

namespace spotlight::bus {

// Notices are small ({version, checksum, location}); bulk data travels elsewhere.
inline constexpr std::int64_t kDefaultMaxMessageSize = 1 << 20;  // bytes per frame
inline constexpr int kDefaultHighWaterMark = 1000;               // messages per peer
inline constexpr std::chrono::milliseconds kDefaultLinger{1000};
inline constexpr std::chrono::milliseconds kDefaultReconnectInterval{100};

}  // namespace spotlight::bus
