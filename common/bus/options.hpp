#pragma once
// Options shared by the bus sockets.

#include <chrono>
#include <cstdint>

namespace spotlight::bus {

// Notices are small ({version, checksum, location}); bulk data travels elsewhere.
inline constexpr std::int64_t kDefaultMaxMessageSize = 1 << 20;  // bytes per frame
// Smallest accepted max_message_size: control frames (subscriptions, confirmations) must fit.
inline constexpr std::int64_t kMinMaxMessageSize = 256;
inline constexpr int kDefaultHighWaterMark = 1000;  // messages per peer
inline constexpr std::chrono::milliseconds kDefaultLinger{1000};
inline constexpr std::chrono::milliseconds kDefaultReconnectInterval{100};
// ZMQ_HANDSHAKE_IVL of listening sockets: a peer that has not completed the ZMTP/CURVE handshake
// by then (garbage, a port scanner, a stalled client) is disconnected (libzmq's default: 30 s).
inline constexpr std::chrono::milliseconds kDefaultHandshakeTimeout{5000};

}  // namespace spotlight::bus
