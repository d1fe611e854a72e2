#pragma once
// RpcClient: request/reply calls to an RpcServer over a ZeroMQ DEALER socket, with retries.
//
//   rpc::RpcClient reward("tcp://reward:5555", rpc::RpcClientOptions{});
//   std::string scores = reward.call(request_bytes);        // throws RpcTimeout, RpcRemoteError
//
// call() is the "lazy pirate" pattern, equivalent to:
//
//   for attempt in 1 .. 1 + retries:
//     id = fresh request id; send [id, payload]
//     wait up to timeout for a reply with this id     // replies with other ids are dropped:
//       ok status    -> return body                   // late answers to earlier attempts
//       error status -> throw RpcRemoteError          // (not retried)
//       the server closed the connection -> next attempt at once (libzmq cuts a connection
//                                           // whose frame is above the server's limit; no reply
//                                           // can come)
//     close the socket and open a new one              // drops queued requests; reconnects to
//                                                      // a restarted server
//   throw RpcConnectionClosed if the server closed the connection on every attempt, else
//   RpcTimeout
//
// Contract:
// - A request may be executed more than once (a reply can be lost after the handler ran): send
//   only idempotent requests.
// - Thread-safe; concurrent calls on one client are serialized (use one client per thread for
//   parallel calls).
// - The server does not have to be up when the client is created or a call starts.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/rpc/options.hpp"
#include "common/zmq/curve.hpp"

namespace spotlight::rpc {

inline constexpr std::chrono::milliseconds kDefaultCallTimeout{2500};
inline constexpr int kDefaultCallRetries = 2;

struct RpcClientOptions {
  std::chrono::milliseconds timeout = kDefaultCallTimeout;  // per attempt, > 0
  int retries = kDefaultCallRetries;  // attempts after the first times out, >= 0
  // ZMQ_MAXMSGSIZE for replies: a larger one drops the connection. Negative: unlimited.
  std::int64_t max_message_size = kDefaultRpcMaxMessageSize;
  zmqio::CurveOptions curve;  // usually curve.client
};

struct RpcClientCounters {
  std::uint64_t calls = 0;          // call() invocations
  std::uint64_t attempts = 0;       // requests sent (calls + retries)
  std::uint64_t timeouts = 0;       // attempts that got no reply in time
  std::uint64_t disconnects = 0;    // attempts ended by the server closing the connection
  std::uint64_t failed = 0;         // calls that threw RpcTimeout or RpcConnectionClosed
  std::uint64_t remote_errors = 0;  // calls that threw RpcRemoteError
  std::uint64_t stale_replies = 0;  // replies whose id was not the current attempt's, dropped
  std::uint64_t malformed_replies = 0;
};

class RpcClient {
 public:
  // Does not connect yet (the first call does). Throws RpcError naming a bad option,
  // zmqio::CurveError for CURVE problems.
  explicit RpcClient(std::string endpoint, RpcClientOptions options = {});
  ~RpcClient();
  RpcClient(const RpcClient&) = delete;
  RpcClient& operator=(const RpcClient&) = delete;

  // Sends `payload` and returns the reply body, with options.timeout per attempt.
  std::string call(std::string_view payload);
  // Same with another per-attempt timeout.
  std::string call(std::string_view payload, std::chrono::milliseconds timeout);

  // Thread-safe snapshot.
  RpcClientCounters counters() const;
  const std::string& endpoint() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spotlight::rpc
