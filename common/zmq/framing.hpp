#pragma once
// Byte-level pieces of the frames that bus notices and RPC messages share: fixed-width integers
// and the reasons a received message is refused. Pure functions, no ZeroMQ, so the parsers built
// on them can be fuzzed on their own (tests/fuzz).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace spotlight::zmqio {

// Fixed-width big-endian encoding of version numbers and request ids.
std::string encode_u64(std::uint64_t value);
std::optional<std::uint64_t> decode_u64(std::string_view bytes);

// Why a received message was not accepted; the names are metric labels.
enum class FrameReject {
  kNone,
  kFrameCount,   // not the expected number of frames
  kDelimiter,    // rpc: the first frame is not the empty delimiter
  kHeader,       // a version / request header of the wrong size or protocol version
  kTooLarge,     // payload above the configured limit
  kBadCommand,   // a publisher's incoming frame that is not a (un)subscription
  kHandshake,    // a connection that failed its ZMTP/CURVE handshake (bad greeting, wrong key)
  kMessageSize,  // rpc: a connection that sent more than max_message_bytes unanswered (closed)
};
// "none", "frame_count", "delimiter", "header", "too_large", "bad_command", "handshake",
// "message_size".
std::string_view to_string(FrameReject reject);

}  // namespace spotlight::zmqio
