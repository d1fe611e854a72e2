#include "common/zmq/socket.hpp"

#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <zmq_addon.hpp>

#include "common/zmq/errors.hpp"
#include "common/zmq/options.hpp"

namespace spotlight::zmqio {

zmq::context_t& context() {
  // Intentionally leaked: see the header.
  static zmq::context_t* const ctx = new zmq::context_t(1);
  return *ctx;
}

void apply_curve(zmq::socket_t& socket, const CurveOptions& curve, const std::string& what) {
  if (!curve.enabled()) return;
  if (curve.server && curve.client) {
    throw CurveError(what + ": set at most one of curve.server and curve.client");
  }
  require_curve();
  if (curve.server) {
    validate_curve_key(curve.server->public_key, what + ": curve.server.public_key");
    validate_curve_key(curve.server->secret_key, what + ": curve.server.secret_key");
    socket.set(zmq::sockopt::curve_server, true);
    socket.set(zmq::sockopt::curve_secretkey, curve.server->secret_key);
    socket.set(zmq::sockopt::curve_publickey, curve.server->public_key);
  } else {
    validate_curve_key(curve.client->own.public_key, what + ": curve.client.own.public_key");
    validate_curve_key(curve.client->own.secret_key, what + ": curve.client.own.secret_key");
    validate_curve_key(curve.client->server_public_key, what + ": curve.client.server_public_key");
    socket.set(zmq::sockopt::curve_serverkey, curve.client->server_public_key);
    socket.set(zmq::sockopt::curve_publickey, curve.client->own.public_key);
    socket.set(zmq::sockopt::curve_secretkey, curve.client->own.secret_key);
  }
}

void apply_max_message_size(zmq::socket_t& socket, std::int64_t limit, const std::string& what) {
  if (limit >= 0 && limit < kMinMaxMessageSize) {
    throw SocketError(what + ": max_message_size " + std::to_string(limit) +
                      " is below the minimum " + std::to_string(kMinMaxMessageSize) +
                      " (negative means unlimited)");
  }
  socket.set(zmq::sockopt::maxmsgsize, limit < 0 ? std::int64_t{-1} : limit);
}

void apply_handshake_timeout(zmq::socket_t& socket, std::chrono::milliseconds timeout,
                             const std::string& what) {
  if (timeout.count() <= 0 || timeout.count() > std::numeric_limits<int>::max()) {
    throw SocketError(what + ": handshake_timeout must be > 0 ms, got " +
                      std::to_string(timeout.count()));
  }
  socket.set(zmq::sockopt::handshake_ivl, static_cast<int>(timeout.count()));
}

std::string bind(zmq::socket_t& socket, const std::string& endpoint, const std::string& what) {
  if (endpoint.empty()) throw SocketError(what + ": empty bind endpoint");
  try {
    socket.bind(endpoint);
  } catch (const zmq::error_t& e) {
    throw SocketError(what + ": bind " + endpoint + ": " + e.what());
  }
  return socket.get(zmq::sockopt::last_endpoint);
}

void connect(zmq::socket_t& socket, const std::string& endpoint, const std::string& what) {
  if (endpoint.empty()) throw SocketError(what + ": empty connect endpoint");
  try {
    socket.connect(endpoint);
  } catch (const zmq::error_t& e) {
    throw SocketError(what + ": connect " + endpoint + ": " + e.what());
  }
}

zmq::socket_t monitor_handshake_failures(zmq::socket_t& socket, const std::string& what) {
  const std::string endpoint = "inproc://spotlight.monitor." + random_hex(8);
  constexpr int kEvents = ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                          ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
  if (zmq_socket_monitor(socket.handle(), endpoint.c_str(), kEvents) != 0) {
    throw SocketError(what + ": zmq_socket_monitor: " + zmq_strerror(zmq_errno()));
  }
  zmq::socket_t monitor(context(), zmq::socket_type::pair);
  monitor.set(zmq::sockopt::linger, 0);
  monitor.connect(endpoint);
  return monitor;
}

std::size_t count_handshake_failures(zmq::socket_t& monitor) {
  std::size_t failures = 0;
  std::vector<zmq::message_t> parts;
  while (zmq::recv_multipart(monitor, std::back_inserter(parts), zmq::recv_flags::dontwait)) {
    // [event: u16 + value: u32, native byte order][endpoint]
    std::uint16_t event = 0;
    if (parts.size() == 2 && parts[0].size() >= sizeof(event)) {
      std::memcpy(&event, parts[0].data(), sizeof(event));
    }
    if (event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL ||
        event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL || event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
      ++failures;
    }
    parts.clear();
  }
  return failures;
}

void stop_monitor(zmq::socket_t& socket) {
  if (socket.handle() != nullptr) zmq_socket_monitor(socket.handle(), nullptr, 0);
}

std::uint64_t random_u64() {
  thread_local std::mt19937_64 gen{std::random_device{}()};
  return gen();
}

std::string random_hex(std::size_t bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes * 2);
  std::uint64_t word = 0;
  for (std::size_t i = 0; i < bytes; ++i) {
    if (i % 8 == 0) word = random_u64();
    const auto b = static_cast<std::uint8_t>(word & 0xff);
    word >>= 8;
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0xf]);
  }
  return out;
}

std::chrono::milliseconds poll_timeout(std::chrono::steady_clock::duration remaining) {
  if (remaining <= std::chrono::steady_clock::duration::zero()) return std::chrono::milliseconds(0);
  return std::chrono::ceil<std::chrono::milliseconds>(remaining);
}

}  // namespace spotlight::zmqio
