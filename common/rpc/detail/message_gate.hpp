#pragma once
// PRIVATE to common/rpc. MessageGate: a TCP relay in front of RpcServer's ROUTER that bounds the
// bytes one client connection can make the server hold.
//
// libzmq hands a multipart message to the application only once its last frame has arrived
// (ZMQ_MAXMSGSIZE bounds each frame, nothing bounds their number), so the server cannot refuse a
// long message before all of it is in memory. The gate listens on the server's TCP endpoint, the
// ROUTER on a private ipc endpoint, and every client connection gets one connection to the
// ROUTER; bytes are relayed both ways, unchanged (CURVE stays end to end). Equivalent to:
//
//   per client connection:
//     unanswered = 0
//     bytes from the client  -> unanswered += n; if unanswered > max_unanswered_bytes: close both
//                               sides (libzmq drops the partial message), count; else forward
//     bytes from the server  -> unanswered = 0; forward
//     either side closes     -> close both
//
// RpcClient has one request in flight per connection and waits for its reply (a retry opens a
// new connection), so a request of at most max_request_bytes never comes near the budget; the
// handshake's bytes are answered by the server's. The gate holds at most two 256 KiB buffers per
// connection; the ROUTER at most max_unanswered_bytes of a connection's unanswered message.
//
// Thread-safe: one thread of its own relays; closed() may be read from any thread.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace spotlight::rpc::detail {

struct MessageGateOptions {
  std::size_t max_unanswered_bytes = 0;  // > 0
  // Called on the gate's thread after a connection was closed for exceeding the budget.
  std::function<void()> on_oversize;
};

class MessageGate {
 public:
  // Listens on `tcp_endpoint` ("tcp://HOST:PORT", HOST an address, a name or "*", PORT a number
  // or "*": a free one) and relays to the Unix socket `router_path`. Throws RpcError naming the
  // endpoint.
  MessageGate(const std::string& tcp_endpoint, std::string router_path, MessageGateOptions options);
  ~MessageGate();  // stops relaying and closes every connection
  MessageGate(const MessageGate&) = delete;
  MessageGate& operator=(const MessageGate&) = delete;

  // "tcp://HOST:PORT" with the port bound.
  const std::string& endpoint() const;
  // Connections closed for exceeding max_unanswered_bytes.
  std::uint64_t closed_oversize() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spotlight::rpc::detail
