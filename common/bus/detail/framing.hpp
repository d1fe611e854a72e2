#pragma once
// PRIVATE to common/bus (and its tests and fuzz targets): the byte-level framing of bus notices
// and subscriptions, as pure functions of the received frames. No ZeroMQ here, so the parsers can
// be fuzzed on their own (tests/fuzz). The pieces RPC shares are in common/zmq/framing.hpp.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/zmq/framing.hpp"

namespace spotlight::bus::detail {

using namespace std::string_view_literals;

// Notice frames on the wire: [topic][version: 8 bytes big-endian][payload].
inline constexpr std::size_t kNoticeFrames = 3;

// Subscription confirmations: a Subscriber subscribes to kAckTopicPrefix + a fresh token; every
// publisher that processes that subscription answers with a notice on that topic whose payload is
// its instance id. A publisher processes the subscriptions of one connection in the order they
// are sent, so the answer proves that the subscriber's other subscriptions are live on it.
// On a (re)connect libzmq resends all subscriptions in byte order of the topic; the prefix starts
// with 0xFF, which user topics may not (and UTF-8 never contains), so the token always goes last.
inline constexpr std::string_view kAckTopicPrefix = "\xffspotlight.ack/"sv;

using zmqio::FrameReject;

// Throws InvalidTopic for an empty topic or one that starts with the reserved byte 0xFF.
void check_topic(std::string_view topic);

// One message received by a Subscriber. The views point into the frames.
struct ParsedNotice {
  FrameReject reject = FrameReject::kNone;
  bool control = false;  // a confirmation (topic starts with kAckTopicPrefix)
  std::string_view topic;
  std::uint64_t version = 0;
  std::string_view payload;
};
// Total: any frames give a ParsedNotice; reject != kNone means the other fields are empty.
ParsedNotice parse_notice(std::span<const std::string_view> frames);

// One frame received by a Publisher's XPUB socket: [1 = subscribe | 0 = unsubscribe][topic].
struct Subscription {
  bool subscribe = true;
  std::string_view topic;
};
// std::nullopt for anything else (an empty frame, another first byte).
std::optional<Subscription> parse_subscription(std::string_view frame);

}  // namespace spotlight::bus::detail
