#include "common/zmq/framing.hpp"

namespace spotlight::zmqio {

std::string encode_u64(std::uint64_t value) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i) {
    out[static_cast<std::size_t>(i)] = static_cast<char>(value & 0xff);
    value >>= 8;
  }
  return out;
}

std::optional<std::uint64_t> decode_u64(std::string_view bytes) {
  if (bytes.size() != 8) return std::nullopt;
  std::uint64_t value = 0;
  for (const char c : bytes)
    value = (value << 8) | static_cast<std::uint8_t>(c);
  return value;
}

std::string_view to_string(FrameReject reject) {
  switch (reject) {
    case FrameReject::kNone:
      return "none";
    case FrameReject::kFrameCount:
      return "frame_count";
    case FrameReject::kDelimiter:
      return "delimiter";
    case FrameReject::kHeader:
      return "header";
    case FrameReject::kTooLarge:
      return "too_large";
    case FrameReject::kBadCommand:
      return "bad_command";
    case FrameReject::kHandshake:
      return "handshake";
    case FrameReject::kMessageSize:
      return "message_size";
  }
  return "unknown";
}

}  // namespace spotlight::zmqio
