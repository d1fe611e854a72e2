#pragma once
// Limits every ZeroMQ socket of Spotlight shares (bus and RPC).

#include <chrono>
#include <cstdint>

namespace spotlight::zmqio {

// Smallest accepted max_message_size (ZMQ_MAXMSGSIZE): control frames (subscriptions,
// confirmations, RPC headers) must fit.
inline constexpr std::int64_t kMinMaxMessageSize = 256;
// ZMQ_HANDSHAKE_IVL of listening sockets: a peer that has not completed the ZMTP/CURVE handshake
// by then (garbage, a port scanner, a stalled client) is disconnected (libzmq's default: 30 s).
inline constexpr std::chrono::milliseconds kDefaultHandshakeTimeout{5000};

}  // namespace spotlight::zmqio
