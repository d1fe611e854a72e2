#pragma once
// PRIVATE to common/rpc: the frame layout shared by RpcServer and RpcClient.
//
//   request (DEALER -> ROUTER): [""][kVersion, id: u64 big-endian][payload]
//   reply   (ROUTER -> DEALER): [""][kVersion, id: u64 big-endian, status: u8][body]
//
// The ROUTER sees the peer's routing id as an extra first frame. The empty delimiter keeps the
// envelope REQ-compatible. `id` is chosen by the client, fresh for every attempt.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/rpc/errors.hpp"
#include "common/zmq/framing.hpp"

namespace spotlight::rpc::detail {

inline constexpr std::uint8_t kProtocolVersion = 1;
inline constexpr std::size_t kRequestFrames = 3;  // as sent by the client
inline constexpr std::size_t kReplyFrames = 3;

std::string encode_request_header(std::uint64_t id);
std::optional<std::uint64_t> decode_request_header(std::string_view header);

struct ReplyHeader {
  std::uint64_t id = 0;
  RpcStatus status = RpcStatus::kOk;
};
std::string encode_reply_header(std::uint64_t id, RpcStatus status);
std::optional<ReplyHeader> decode_reply_header(std::string_view header);

// A request as received by the ROUTER, without the peer's routing-id frame:
// [""][header][payload]. Total: any frames give a ParsedRequest. When reject != kNone, `status`
// and `error` are the answer to send (to `id` when the header could be read, else to id 0).
// `total_frames` (0: frames.size()) is how many frames the message had when the receiver kept
// only the first ones.
struct ParsedRequest {
  zmqio::FrameReject reject = zmqio::FrameReject::kNone;
  std::optional<std::uint64_t> id;
  RpcStatus status = RpcStatus::kOk;
  std::string error;
  std::string_view payload;  // points into the frames
};
ParsedRequest parse_request(std::span<const std::string_view> frames, std::size_t max_request_bytes,
                            std::size_t total_frames = 0);

// A reply as received by the DEALER: [""][header][body]. std::nullopt when malformed.
struct ParsedReply {
  ReplyHeader header;
  std::string_view body;  // points into the frames
};
std::optional<ParsedReply> parse_reply(std::span<const std::string_view> frames);

}  // namespace spotlight::rpc::detail
