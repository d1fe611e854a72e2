#pragma once
// Defaults shared by RpcServer and RpcClient.

#include <cstdint>

namespace spotlight::rpc {

// ZMQ_MAXMSGSIZE: frames above it are dropped by libzmq together with the connection.
inline constexpr std::int64_t kDefaultRpcMaxMessageSize = std::int64_t{128} << 20;
inline constexpr int kDefaultRpcHighWaterMark = 1000;  // messages queued per peer

}  // namespace spotlight::rpc
