#pragma once
// PRIVATE to common/bus and common/rpc (and their tests and fuzz targets): the byte-level framing
// of bus notices and subscriptions, as pure functions of the received frames. No ZeroMQ here, so
// the parsers can be fuzzed on their own (tests/fuzz).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

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

// Fixed-width big-endian encoding of version numbers and request ids.
std::string encode_u64(std::uint64_t value);
std::optional<std::uint64_t> decode_u64(std::string_view bytes);

// Why a received message was not accepted; the names are metric labels.
enum class FrameReject {
  kNone,
  kFrameCount,  // not the expected number of frames
  kDelimiter,   // rpc: the first frame is not the empty delimiter
  kHeader,      // a version / request header of the wrong size or protocol version
  kTooLarge,    // payload above the configured limit
  kBadCommand,  // a publisher's incoming frame that is not a (un)subscription
  kHandshake,   // a connection that failed its ZMTP/CURVE handshake (bad greeting, wrong key)
};
// "none", "frame_count", "delimiter", "header", "too_large", "bad_command", "handshake".
std::string_view to_string(FrameReject reject);

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
