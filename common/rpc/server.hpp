#pragma once
// RpcServer: batched request/reply over a ZeroMQ ROUTER socket (the reward service's front).
//
//   rpc::RpcServer server([](std::vector<rpc::RpcRequest> batch) {
//     std::vector<rpc::RpcReply> out;
//     for (auto& r : batch) out.emplace_back(score(r.payload));
//     return out;
//   }, rpc::RpcServerOptions{});
//   std::string ep = server.bind("tcp://127.0.0.1:*");
//   std::jthread loop([&](std::stop_token st) { server.run(st); });
//
// run() is equivalent to:
//
//   while not stopped:
//     wait for a request (no timeout while the batch is empty)
//     batch = requests until max_batch of them, or batch_window after the first one
//     replies = handler(batch)            // once per batch, on the run() thread
//     send replies[i] to the client of batch[i], tagged with its request id
//   answer the batch in hand, return
//
// Contract:
// - The handler sees each batch once; replies[i] answers batch[i]. If it throws, or returns a
//   reply count other than batch.size(), every request of the batch gets a kHandlerError reply.
// - Clients retry after a timeout, so a handler may see the same request twice: handlers must
//   be idempotent (a reward is a pure function of its input).
// - A message with the wrong frame count, a bad header or a payload above max_request_bytes is
//   answered with an error status and counted as malformed; it never reaches the handler and
//   never stops the server. Frames above max_message_size are dropped by libzmq together with
//   the connection (no reply is possible; the client times out and reconnects). A peer that
//   does not complete the ZMTP/CURVE handshake within handshake_timeout is dropped and counted
//   (rejected_handshake).
// - bind() before run(); run() may then be called from another thread. stop() and counters()
//   are thread-safe. A stopped server stays stopped; destroy it after run() has returned.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "common/rpc/options.hpp"
#include "common/zmq/curve.hpp"
#include "common/zmq/options.hpp"

namespace spotlight::rpc {

struct RpcRequest {
  std::uint64_t id = 0;  // the client's request id (unique per client and attempt)
  std::string peer;      // opaque routing id of the client connection (for logs)
  std::string payload;
};

struct RpcReply {
  // A successful reply. Implicit, so handlers can write `out.emplace_back(body)`.
  RpcReply(std::string reply_body)
      : body(std::move(reply_body)) {}  // NOLINT(google-explicit-constructor)
  // An error reply for this request only; the client throws RpcRemoteError(kHandlerError).
  static RpcReply error(std::string message) {
    RpcReply r(std::move(message));
    r.ok = false;
    return r;
  }

  std::string body;
  bool ok = true;
};

using BatchHandler = std::function<std::vector<RpcReply>(std::vector<RpcRequest> batch)>;

inline constexpr std::size_t kDefaultMaxBatch = 32;
inline constexpr std::chrono::microseconds kDefaultBatchWindow{5000};
inline constexpr std::size_t kDefaultMaxRequestBytes = std::size_t{64} << 20;

struct RpcServerOptions {
  std::size_t max_batch = kDefaultMaxBatch;                      // >= 1
  std::chrono::microseconds batch_window = kDefaultBatchWindow;  // >= 0; 0: no waiting
  std::size_t max_request_bytes = kDefaultMaxRequestBytes;       // larger payloads: kTooLarge reply
  // ZMQ_MAXMSGSIZE: larger frames are dropped with the connection. Negative: unlimited.
  std::int64_t max_message_size = kDefaultRpcMaxMessageSize;
  int high_water_mark = kDefaultRpcHighWaterMark;  // ZMQ_SNDHWM/RCVHWM per client
  // Clients that do not complete the ZMTP/CURVE handshake in this time are dropped (counted as
  // "handshake" rejects). > 0.
  std::chrono::milliseconds handshake_timeout = zmqio::kDefaultHandshakeTimeout;
  zmqio::CurveOptions curve;  // usually curve.server
  // Called on the run() thread for every message rejected before the handler, with the reason:
  // "frame_count", "delimiter", "header", "too_large", or "handshake" for a connection that
  // failed its ZMTP/CURVE handshake (wrong key, not ZMTP, hung up). Must not throw; may be empty.
  std::function<void(std::string_view reason)> on_reject;
};

struct RpcServerCounters {
  std::uint64_t requests = 0;   // requests handed to the handler
  std::uint64_t batches = 0;    // handler calls
  std::uint64_t errors = 0;     // requests answered with kHandlerError
  std::uint64_t malformed = 0;  // messages rejected before the handler (incl. oversized)
  // `malformed` by reason:
  std::uint64_t rejected_frame_count = 0;  // not [""][header][payload]
  std::uint64_t rejected_delimiter = 0;    // first frame not empty
  std::uint64_t rejected_header = 0;       // header not 9 bytes of protocol version 1 + id
  std::uint64_t rejected_too_large = 0;    // payload above max_request_bytes
  // Connections that failed the ZMTP/CURVE handshake (not in `malformed`: no message arrived).
  // Counted while run() serves.
  std::uint64_t rejected_handshake = 0;
};

class RpcServer {
 public:
  // Throws RpcError naming the bad option, zmqio::CurveError for CURVE problems.
  explicit RpcServer(BatchHandler handler, RpcServerOptions options = {});
  ~RpcServer();
  RpcServer(const RpcServer&) = delete;
  RpcServer& operator=(const RpcServer&) = delete;

  // Listens on exactly `endpoint`; returns the resolved address. Before run(). Throws RpcError.
  std::string bind(const std::string& endpoint);

  // Serves until stop() or `stop` is requested. Throws RpcError if already running.
  void run(std::stop_token stop = {});
  // Makes run() return after the batch in hand is answered. Thread-safe, idempotent.
  void stop();

  RpcServerCounters counters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spotlight::rpc
