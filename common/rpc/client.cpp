#include "common/rpc/client.hpp"

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <variant>
#include <vector>

#include <zmq_addon.hpp>

#include "common/rpc/detail/protocol.hpp"
#include "common/rpc/errors.hpp"
#include "common/zmq/errors.hpp"
#include "common/zmq/options.hpp"
#include "common/zmq/socket.hpp"

namespace spotlight::rpc {

using Clock = std::chrono::steady_clock;

namespace {

// A DEALER socket and a monitor of its connections' closing. The server closing the connection
// while a request is outstanding (libzmq drops a frame above the server's ZMQ_MAXMSGSIZE together
// with the connection; the message relay closes one past max_message_bytes) means no reply can
// come, so the attempt ends then instead of at its timeout.
struct Connection {
  zmq::socket_t dealer;
  zmq::socket_t monitor;  // PAIR, receives the disconnections and failed handshakes of `dealer`

  Connection(zmq::socket_t d, zmq::socket_t m) : dealer(std::move(d)), monitor(std::move(m)) {}
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() { zmq_socket_monitor(dealer.handle(), nullptr, 0); }

  enum class Closed { kNo, kYes, kInHandshake };
  // Reads every pending event: whether one was a disconnection, and whether the ZMTP/CURVE
  // handshake failed first (libzmq reports both for a connection closed while handshaking).
  Closed closed() {
    Closed result = Closed::kNo;
    zmq::message_t event;
    while (monitor.recv(event, zmq::recv_flags::dontwait)) {
      // [u16 event, u32 value] then the endpoint's address, in a frame of its own.
      if (event.size() >= sizeof(std::uint16_t)) {
        std::uint16_t id = 0;
        std::memcpy(&id, event.data(), sizeof(id));
        if ((id & kHandshakeFailed) != 0) result = Closed::kInHandshake;
        if (id == ZMQ_EVENT_DISCONNECTED && result == Closed::kNo) result = Closed::kYes;
      }
      while (event.more() && monitor.recv(event, zmq::recv_flags::dontwait)) {
      }
    }
    return result;
  }

  static constexpr int kHandshakeFailed = ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                                          ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                          ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
};

std::atomic<std::uint64_t> monitors{0};  // names of the monitors' inproc endpoints

}  // namespace

struct RpcClient::Impl {
  Impl(std::string ep, RpcClientOptions o);
  void open();
  enum class NoReply { kTimeout, kClosed, kHandshakeFailed };
  // The reply to attempt `id`, or why none came: `deadline` passed, or the connection closed
  // (after, or during, its handshake).
  std::variant<std::pair<detail::ReplyHeader, std::string>, NoReply> await_reply(
      std::uint64_t id, Clock::time_point deadline);

  const std::string endpoint;
  const RpcClientOptions options;

  std::mutex mutex;  // serializes calls; guards socket and next_id
  std::optional<Connection> socket;
  std::uint64_t next_id = zmqio::random_u64();

  std::atomic<std::uint64_t> calls{0};
  std::atomic<std::uint64_t> attempts{0};
  std::atomic<std::uint64_t> timeouts{0};
  std::atomic<std::uint64_t> disconnects{0};
  std::atomic<std::uint64_t> failed{0};
  std::atomic<std::uint64_t> remote_errors{0};
  std::atomic<std::uint64_t> stale_replies{0};
  std::atomic<std::uint64_t> malformed_replies{0};
};

RpcClient::Impl::Impl(std::string ep, RpcClientOptions o)
    : endpoint(std::move(ep)), options(std::move(o)) {
  if (endpoint.empty()) throw RpcError("rpc client: endpoint is empty");
  if (options.timeout.count() <= 0) throw RpcError("rpc client: timeout must be > 0");
  if (options.retries < 0) throw RpcError("rpc client: retries must be >= 0");
  if (options.max_message_size >= 0 && options.max_message_size < zmqio::kMinMaxMessageSize) {
    throw RpcError("rpc client: max_message_size must be >= " +
                   std::to_string(zmqio::kMinMaxMessageSize) + " or negative (unlimited)");
  }
  // Fail on bad CURVE options now rather than at the first call.
  zmq::socket_t probe(zmqio::context(), zmq::socket_type::dealer);
  zmqio::apply_curve(probe, options.curve, "rpc client");
  probe.set(zmq::sockopt::linger, 0);
}

void RpcClient::Impl::open() {
  zmq::socket_t s(zmqio::context(), zmq::socket_type::dealer);
  s.set(zmq::sockopt::linger, 0);  // a closed socket's unsent requests are abandoned
  zmqio::apply_curve(s, options.curve, "rpc client");
  zmqio::apply_max_message_size(s, options.max_message_size, "rpc client");
  const std::string monitor_endpoint =
      "inproc://spotlight-rpc-client-monitor-" + std::to_string(monitors++);
  if (zmq_socket_monitor(s.handle(), monitor_endpoint.c_str(),
                         ZMQ_EVENT_DISCONNECTED | Connection::kHandshakeFailed) != 0) {
    throw RpcError(std::string("rpc client: socket monitor: ") + zmq_strerror(zmq_errno()));
  }
  zmq::socket_t monitor(zmqio::context(), zmq::socket_type::pair);
  monitor.set(zmq::sockopt::linger, 0);
  monitor.connect(monitor_endpoint);
  socket.emplace(std::move(s), std::move(monitor));
  try {
    zmqio::connect(socket->dealer, endpoint, "rpc client");
  } catch (const zmqio::SocketError& e) {
    socket.reset();
    throw RpcError(e.what());
  }
}

std::variant<std::pair<detail::ReplyHeader, std::string>, RpcClient::Impl::NoReply>
RpcClient::Impl::await_reply(std::uint64_t id, Clock::time_point deadline) {
  for (;;) {
    const auto remaining = deadline - Clock::now();
    if (remaining <= Clock::duration::zero()) return NoReply::kTimeout;
    std::array<zmq::pollitem_t, 2> items{{{socket->dealer.handle(), 0, ZMQ_POLLIN, 0},
                                          {socket->monitor.handle(), 0, ZMQ_POLLIN, 0}}};
    try {
      if (zmq::poll(items.data(), items.size(), zmqio::poll_timeout(remaining)) == 0) continue;
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      throw RpcError(std::string("rpc client: poll: ") + e.what());
    }
    // A reply that arrived before the connection closed is still read below.
    const auto closed =
        (items[1].revents & ZMQ_POLLIN) != 0 ? socket->closed() : Connection::Closed::kNo;
    std::vector<zmq::message_t> parts;
    while (
        zmq::recv_multipart(socket->dealer, std::back_inserter(parts), zmq::recv_flags::dontwait)) {
      std::vector<std::string_view> frames;
      frames.reserve(parts.size());
      for (const auto& part : parts)
        frames.push_back(part.to_string_view());
      const auto reply = detail::parse_reply(frames);
      if (!reply) {
        ++malformed_replies;
      } else if (reply->header.id != id) {
        ++stale_replies;
      } else {
        return std::make_pair(reply->header, std::string(reply->body));
      }
      parts.clear();
    }
    if (closed == Connection::Closed::kYes) return NoReply::kClosed;
    if (closed == Connection::Closed::kInHandshake) return NoReply::kHandshakeFailed;
  }
}

RpcClient::RpcClient(std::string endpoint, RpcClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(endpoint), std::move(options))) {}

RpcClient::~RpcClient() = default;

std::string RpcClient::call(std::string_view payload) {
  return call(payload, impl_->options.timeout);
}

std::string RpcClient::call(std::string_view payload, std::chrono::milliseconds timeout) {
  Impl& s = *impl_;
  if (timeout.count() <= 0) throw RpcError("rpc client: call timeout must be > 0");
  std::lock_guard lock(s.mutex);
  ++s.calls;
  const int max_attempts = 1 + s.options.retries;
  int closed = 0;      // attempts ended by the connection closing
  int handshakes = 0;  // of those, closed in a failed handshake
  for (int attempt = 0; attempt < max_attempts; ++attempt) {
    if (!s.socket) s.open();
    s.socket->closed();  // a connection that closed between calls is not this request's
    const std::uint64_t id = s.next_id++;
    const std::string header = detail::encode_request_header(id);
    ++s.attempts;
    const auto deadline = Clock::now() + timeout;
    bool sent = false;
    try {
      // Blocks only while the socket is at its high-water mark, and never past the deadline.
      zmq::socket_t& dealer = s.socket->dealer;
      dealer.set(zmq::sockopt::sndtimeo, static_cast<int>(timeout.count()));
      sent = dealer.send(zmq::message_t(), zmq::send_flags::sndmore).has_value();
      if (sent) {
        // The remaining frames of a message whose first frame was taken are always taken.
        dealer.send(zmq::buffer(header), zmq::send_flags::sndmore);
        dealer.send(zmq::buffer(payload.data(), payload.size()), zmq::send_flags::none);
      }
    } catch (const zmq::error_t& e) {
      throw RpcError("rpc call to " + s.endpoint + ": send: " + e.what());
    }
    auto outcome = sent ? s.await_reply(id, deadline) : Impl::NoReply::kTimeout;
    if (auto* reply = std::get_if<0>(&outcome)) {
      if (reply->first.status == RpcStatus::kOk) return std::move(reply->second);
      ++s.remote_errors;
      throw RpcRemoteError(s.endpoint, reply->first.status, std::move(reply->second));
    }
    if (std::get<1>(outcome) != Impl::NoReply::kTimeout) {
      ++s.disconnects;
      ++closed;
      if (std::get<1>(outcome) == Impl::NoReply::kHandshakeFailed) ++handshakes;
    } else {
      ++s.timeouts;
    }
    // Lazy pirate: the old socket may hold a dead connection or queued requests; start over.
    s.socket.reset();
  }
  ++s.failed;
  if (closed == max_attempts) {
    throw RpcConnectionClosed(s.endpoint, max_attempts, payload.size(),
                              /*handshake_failed=*/handshakes == max_attempts);
  }
  throw RpcTimeout(s.endpoint, max_attempts, timeout);
}

RpcClientCounters RpcClient::counters() const {
  const Impl& s = *impl_;
  return RpcClientCounters{.calls = s.calls.load(),
                           .attempts = s.attempts.load(),
                           .timeouts = s.timeouts.load(),
                           .disconnects = s.disconnects.load(),
                           .failed = s.failed.load(),
                           .remote_errors = s.remote_errors.load(),
                           .stale_replies = s.stale_replies.load(),
                           .malformed_replies = s.malformed_replies.load()};
}

const std::string& RpcClient::endpoint() const {
  return impl_->endpoint;
}

}  // namespace spotlight::rpc
