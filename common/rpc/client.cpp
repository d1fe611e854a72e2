#include "common/rpc/client.hpp"

#include <atomic>
#include <cerrno>
#include <mutex>
#include <optional>
#include <vector>

#include <zmq_addon.hpp>

#include "common/rpc/detail/protocol.hpp"
#include "common/rpc/errors.hpp"
#include "common/zmq/errors.hpp"
#include "common/zmq/options.hpp"
#include "common/zmq/socket.hpp"

namespace spotlight::rpc {

using Clock = std::chrono::steady_clock;

struct RpcClient::Impl {
  Impl(std::string ep, RpcClientOptions o);
  void open();
  // The reply to attempt `id`, or std::nullopt when `deadline` passes first.
  std::optional<std::pair<detail::ReplyHeader, std::string>> await_reply(
      std::uint64_t id, Clock::time_point deadline);

  const std::string endpoint;
  const RpcClientOptions options;

  std::mutex mutex;  // serializes calls; guards socket and next_id
  std::optional<zmq::socket_t> socket;
  std::uint64_t next_id = zmqio::random_u64();

  std::atomic<std::uint64_t> calls{0};
  std::atomic<std::uint64_t> attempts{0};
  std::atomic<std::uint64_t> timeouts{0};
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
  try {
    zmqio::connect(s, endpoint, "rpc client");
  } catch (const zmqio::SocketError& e) {
    throw RpcError(e.what());
  }
  socket.emplace(std::move(s));
}

std::optional<std::pair<detail::ReplyHeader, std::string>> RpcClient::Impl::await_reply(
    std::uint64_t id, Clock::time_point deadline) {
  for (;;) {
    const auto remaining = deadline - Clock::now();
    if (remaining <= Clock::duration::zero()) return std::nullopt;
    zmq::pollitem_t item{socket->handle(), 0, ZMQ_POLLIN, 0};
    try {
      if (zmq::poll(&item, 1, zmqio::poll_timeout(remaining)) == 0) continue;
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      throw RpcError(std::string("rpc client: poll: ") + e.what());
    }
    std::vector<zmq::message_t> parts;
    while (zmq::recv_multipart(*socket, std::back_inserter(parts), zmq::recv_flags::dontwait)) {
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
  for (int attempt = 0; attempt < max_attempts; ++attempt) {
    if (!s.socket) s.open();
    const std::uint64_t id = s.next_id++;
    const std::string header = detail::encode_request_header(id);
    ++s.attempts;
    const auto deadline = Clock::now() + timeout;
    bool sent = false;
    try {
      // Blocks only while the socket is at its high-water mark, and never past the deadline.
      s.socket->set(zmq::sockopt::sndtimeo, static_cast<int>(timeout.count()));
      sent = s.socket->send(zmq::message_t(), zmq::send_flags::sndmore).has_value();
      if (sent) {
        // The remaining frames of a message whose first frame was taken are always taken.
        s.socket->send(zmq::buffer(header), zmq::send_flags::sndmore);
        s.socket->send(zmq::buffer(payload.data(), payload.size()), zmq::send_flags::none);
      }
    } catch (const zmq::error_t& e) {
      throw RpcError("rpc call to " + s.endpoint + ": send: " + e.what());
    }
    if (sent) {
      if (auto reply = s.await_reply(id, deadline)) {
        if (reply->first.status == RpcStatus::kOk) return std::move(reply->second);
        ++s.remote_errors;
        throw RpcRemoteError(s.endpoint, reply->first.status, std::move(reply->second));
      }
    }
    // Lazy pirate: the old socket may hold a dead connection or queued requests; start over.
    ++s.timeouts;
    s.socket.reset();
  }
  ++s.failed;
  throw RpcTimeout(s.endpoint, max_attempts, timeout);
}

RpcClientCounters RpcClient::counters() const {
  const Impl& s = *impl_;
  return RpcClientCounters{
      s.calls.load(),         s.attempts.load(),      s.timeouts.load(),         s.failed.load(),
      s.remote_errors.load(), s.stale_replies.load(), s.malformed_replies.load()};
}

const std::string& RpcClient::endpoint() const {
  return impl_->endpoint;
}

}  // namespace spotlight::rpc
