#pragma once
// The socket helpers common/bus and common/rpc build on: the process-wide context, CURVE and limit
// options, bind/connect with errors that name the owner, handshake-failure monitoring.
//
// This header includes <zmq.hpp>: include it from .cpp files of the transport modules only (bus,
// rpc), never from a header a service sees (deploy/architecture.json allows it nowhere else).
//
// Namespace spotlight::zmqio, not spotlight::zmq: the latter would hide cppzmq's ::zmq inside
// every spotlight namespace.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <zmq.hpp>

#include "common/zmq/curve.hpp"

namespace spotlight::zmqio {

// The process-wide ZeroMQ context (one I/O thread). Created on first use and never terminated,
// so closing a socket never blocks on linger and static destruction order does not matter.
zmq::context_t& context();

// Applies CURVE options; `what` names the owner in errors ("publisher", "rpc client", ...).
// Throws CurveError when both roles are set, a key is invalid, or libzmq lacks CURVE.
void apply_curve(zmq::socket_t& socket, const CurveOptions& curve, const std::string& what);

// ZMQ_MAXMSGSIZE; a negative limit means unlimited. Throws SocketError naming `what` for a limit
// below kMinMaxMessageSize.
void apply_max_message_size(zmq::socket_t& socket, std::int64_t limit, const std::string& what);

// ZMQ_HANDSHAKE_IVL. Throws SocketError naming `what` unless timeout > 0.
void apply_handshake_timeout(zmq::socket_t& socket, std::chrono::milliseconds timeout,
                             const std::string& what);

// Binds and returns the resolved endpoint (a "*" port replaced by the real one). Binds exactly
// the given address: there are no default or wildcard addresses. Throws SocketError naming it.
std::string bind(zmq::socket_t& socket, const std::string& endpoint, const std::string& what);
void connect(zmq::socket_t& socket, const std::string& endpoint, const std::string& what);

// Reports failed handshakes of `socket` (ZMQ_EVENT_HANDSHAKE_FAILED_*: a greeting that is not
// ZMTP or names another mechanism, a CURVE peer with the wrong key, a peer that hung up while
// handshaking) to the returned PAIR socket; poll it and call count_handshake_failures(). Call
// stop_monitor(socket) before closing `socket`. Throws SocketError naming `what`.
zmq::socket_t monitor_handshake_failures(zmq::socket_t& socket, const std::string& what);
// Drains the monitor without blocking; returns the number of failed handshakes it reported.
std::size_t count_handshake_failures(zmq::socket_t& monitor);
void stop_monitor(zmq::socket_t& socket);

// `bytes` random bytes as lowercase hex (for instance ids, inproc names, tokens).
std::string random_hex(std::size_t bytes);
std::uint64_t random_u64();

// poll() timeout in whole milliseconds, rounded up so a short remaining time still waits.
std::chrono::milliseconds poll_timeout(std::chrono::steady_clock::duration remaining);

}  // namespace spotlight::zmqio
