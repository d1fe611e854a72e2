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
// Serving with asynchronous replies instead (RpcServer(RequestSink, ...)): every well-formed
// request goes to the sink on the run() thread as soon as it is read, its payload still in the
// frame it arrived in (not copied); whoever the sink hands it to answers later, from any thread,
// with reply(). max_batch and batch_window do not apply: scheduling is the sink's. run() sends
// every reply posted before it returns.
//
// Contract:
// - The handler sees each batch once; replies[i] answers batch[i]. If it throws, or returns a
//   reply count other than batch.size(), every request of the batch gets a kHandlerError reply.
// - Clients retry after a timeout, so a handler may see the same request twice: handlers must
//   be idempotent (a reward is a pure function of its input).
// - A message with the wrong frame count, a bad header or a payload above max_request_bytes is
//   answered with an error status and counted as malformed; it never reaches the handler and
//   never stops the server. Frames are read one at a time and those beyond the protocol's three
//   are freed at once. Frames above max_message_size are dropped by libzmq together with the
//   connection, as their size arrives (no reply is possible; RpcClient sees the connection close
//   and retries on a fresh one, then throws RpcConnectionClosed). libzmq bounds frames, not frames
//   per message: it holds a multipart message whole before run() sees its first frame. So on a
//   tcp:// endpoint with max_message_bytes > 0 the clients connect to a relay
//   (detail/message_gate.hpp) that closes a connection once it has sent more than max_message_bytes
//   since the server last answered it: libzmq drops the partial message (no reply is possible) and
//   the connection is counted (rejected_message_size, reason "message_size"). A peer that does not
//   complete the ZMTP/CURVE handshake within handshake_timeout is dropped and counted
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
  // Released by the run() thread once the reply is sent (e.g. the request's buffers, so that
  // freeing them costs the replying thread nothing).
  std::shared_ptr<const void> release_after_send;
};

using BatchHandler = std::function<std::vector<RpcReply>(std::vector<RpcRequest> batch)>;

// Bytes of a received request, kept where they arrived (the ZeroMQ frame) rather than copied.
// Immutable and cheap to copy (shared); may be handed to other threads.
class RpcPayload {
 public:
  RpcPayload() = default;
  explicit RpcPayload(std::string bytes);  // owns them (tests, adapters)
  // Views `bytes`, keeping `owner` (whatever holds them) alive as long as any copy lives.
  RpcPayload(std::shared_ptr<const void> owner, std::string_view bytes)
      : owner_(std::move(owner)), bytes_(bytes) {}
  std::string_view bytes() const { return bytes_; }
  std::size_t size() const { return bytes_.size(); }

 private:
  std::shared_ptr<const void> owner_;
  std::string_view bytes_;
};

// One request for a RequestSink; answer it with RpcServer::reply(call.peer, call.id, ...).
struct RpcCall {
  std::uint64_t id = 0;
  std::string peer;  // opaque routing id of the client connection: one per client connection
  RpcPayload payload;
};
using RequestSink = std::function<void(RpcCall call)>;

inline constexpr std::size_t kDefaultMaxBatch = 32;
inline constexpr std::chrono::microseconds kDefaultBatchWindow{5000};
inline constexpr std::size_t kDefaultMaxRequestBytes = std::size_t{64} << 20;

struct RpcServerOptions {
  std::size_t max_batch = kDefaultMaxBatch;                      // >= 1
  std::chrono::microseconds batch_window = kDefaultBatchWindow;  // >= 0; 0: no waiting
  std::size_t max_request_bytes = kDefaultMaxRequestBytes;       // larger payloads: kTooLarge reply
  // ZMQ_MAXMSGSIZE: larger frames are dropped with the connection. Negative: unlimited.
  std::int64_t max_message_size = kDefaultRpcMaxMessageSize;
  // Most bytes a client connection may send while unanswered, i.e. the most one message may
  // total with its framing (see above); tcp:// endpoints only. 0: no limit (libzmq holds a
  // message of any number of frames whole). >= max_request_bytes plus framing.
  std::size_t max_message_bytes = 0;
  int high_water_mark = kDefaultRpcHighWaterMark;  // ZMQ_SNDHWM/RCVHWM per client
  // Clients that do not complete the ZMTP/CURVE handshake in this time are dropped (counted as
  // "handshake" rejects). > 0.
  std::chrono::milliseconds handshake_timeout = zmqio::kDefaultHandshakeTimeout;
  zmqio::CurveOptions curve;  // usually curve.server
  // Called on the run() thread for every message rejected before the handler, with the reason:
  // "frame_count", "delimiter", "header", "too_large", "message_size" (a connection closed for
  // exceeding max_message_bytes), or "handshake" for a connection that failed its ZMTP/CURVE
  // handshake (wrong key, not ZMTP, hung up). Must not throw; may be empty.
  std::function<void(std::string_view reason)> on_reject;
};

struct RpcServerCounters {
  std::uint64_t requests = 0;   // requests handed to the handler
  std::uint64_t batches = 0;    // handler calls
  std::uint64_t errors = 0;     // requests answered with kHandlerError
  std::uint64_t malformed = 0;  // messages rejected before the handler (incl. oversized)
  // `malformed` by reason:
  std::uint64_t rejected_frame_count = 0;   // not [""][header][payload]
  std::uint64_t rejected_delimiter = 0;     // first frame not empty
  std::uint64_t rejected_header = 0;        // header not 9 bytes of protocol version 1 + id
  std::uint64_t rejected_too_large = 0;     // payload above max_request_bytes
  std::uint64_t rejected_message_size = 0;  // connections closed above max_message_bytes
  // Connections that failed the ZMTP/CURVE handshake (not in `malformed`: no message arrived).
  // Counted while run() serves.
  std::uint64_t rejected_handshake = 0;
};

class RpcServer {
 public:
  // Throws RpcError naming the bad option, zmqio::CurveError for CURVE problems.
  explicit RpcServer(BatchHandler handler, RpcServerOptions options = {});
  // Asynchronous replies (see above). Same errors.
  explicit RpcServer(RequestSink sink, RpcServerOptions options = {});
  ~RpcServer();
  RpcServer(const RpcServer&) = delete;
  RpcServer& operator=(const RpcServer&) = delete;

  // Listens on exactly `endpoint`; returns the resolved address. Before run(). Throws RpcError.
  // With max_message_bytes on a tcp:// endpoint, the ROUTER listens on a private ipc endpoint in
  // a new directory of $TMPDIR (else /tmp), removed with the server (or, after a SIGKILL, by the
  // next server that binds one: a directory whose lock file no process holds).
  std::string bind(const std::string& endpoint);

  // Serves until stop() or `stop` is requested. Throws RpcError if already running.
  void run(std::stop_token stop = {});
  // Makes run() return after the batch in hand is answered. Thread-safe, idempotent.
  void stop();

  // Sends `reply` to request `id` of client `peer` (a RequestSink's RpcCall), from the run()
  // thread. Thread-safe; a reply for a client that is gone is dropped.
  void reply(const std::string& peer, std::uint64_t id, RpcReply reply);

  RpcServerCounters counters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spotlight::rpc
