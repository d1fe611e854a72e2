#pragma once
// PRIVATE to the .cpp files of common/bus and common/rpc: this header includes <zmq.hpp> and must
// never be included from a public header.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <zmq.hpp>

#include "common/bus/curve.hpp"
#include "common/bus/detail/framing.hpp"

namespace spotlight::bus::detail {

// Throws InvalidTopic for an empty topic or one that starts with the reserved byte 0xFF.
void check_topic(std::string_view topic);

// Bound on how long a caller waits for the publisher's I/O thread to take a command.
inline constexpr std::chrono::milliseconds kCommandTimeout{10000};

// The process-wide ZeroMQ context (one I/O thread). Created on first use and never terminated,
// so closing a socket never blocks on linger and static destruction order does not matter.
zmq::context_t& context();

// Applies CURVE options; `what` names the owner in errors ("publisher", "rpc client", ...).
// Throws CurveError when both roles are set, a key is invalid, or libzmq lacks CURVE.
void apply_curve(zmq::socket_t& socket, const CurveOptions& curve, const std::string& what);

// ZMQ_MAXMSGSIZE; a negative limit means unlimited. Throws BusError naming `what` for a limit
// below kMinMaxMessageSize.
void apply_max_message_size(zmq::socket_t& socket, std::int64_t limit, const std::string& what);

// Binds and returns the resolved endpoint (a "*" port replaced by the real one). Binds exactly
// the given address: there are no default or wildcard addresses. Throws BusError naming it.
std::string bind(zmq::socket_t& socket, const std::string& endpoint, const std::string& what);
void connect(zmq::socket_t& socket, const std::string& endpoint, const std::string& what);

// Reports failed handshakes of `socket` (ZMQ_EVENT_HANDSHAKE_FAILED_*: a greeting that is not
// ZMTP or names another mechanism, a CURVE peer with the wrong key, a peer that hung up while
// handshaking) to the returned PAIR socket; poll it and call count_handshake_failures(). Call
// stop_monitor(socket) before closing `socket`. Throws BusError naming `what`.
zmq::socket_t monitor_handshake_failures(zmq::socket_t& socket, const std::string& what);
// Drains the monitor without blocking; returns the number of failed handshakes it reported.
std::size_t count_handshake_failures(zmq::socket_t& monitor);
void stop_monitor(zmq::socket_t& socket);

// `bytes` random bytes as lowercase hex (for instance ids, inproc names, tokens).
std::string random_hex(std::size_t bytes);
std::uint64_t random_u64();

// poll() timeout in whole milliseconds, rounded up so a short remaining time still waits.
std::chrono::milliseconds poll_timeout(std::chrono::steady_clock::duration remaining);

}  // namespace spotlight::bus::detail
