#include "common/rpc/detail/protocol.hpp"

#include <algorithm>

#include "common/zmq/framing.hpp"

namespace spotlight::rpc {

std::string_view to_string(RpcStatus status) {
  switch (status) {
    case RpcStatus::kOk:
      return "ok";
    case RpcStatus::kHandlerError:
      return "handler error";
    case RpcStatus::kMalformed:
      return "malformed request";
    case RpcStatus::kTooLarge:
      return "request too large";
  }
  return "unknown status";
}

namespace detail {

std::string encode_request_header(std::uint64_t id) {
  return std::string(1, static_cast<char>(kProtocolVersion)) + zmqio::encode_u64(id);
}

std::optional<std::uint64_t> decode_request_header(std::string_view header) {
  if (header.size() != 9 || static_cast<std::uint8_t>(header[0]) != kProtocolVersion) {
    return std::nullopt;
  }
  return zmqio::decode_u64(header.substr(1));
}

std::string encode_reply_header(std::uint64_t id, RpcStatus status) {
  return encode_request_header(id) + std::string(1, static_cast<char>(status));
}

std::optional<ReplyHeader> decode_reply_header(std::string_view header) {
  if (header.size() != 10) return std::nullopt;
  const auto id = decode_request_header(header.substr(0, 9));
  const auto status = static_cast<std::uint8_t>(header[9]);
  if (!id || status > static_cast<std::uint8_t>(RpcStatus::kTooLarge)) return std::nullopt;
  return ReplyHeader{*id, static_cast<RpcStatus>(status)};
}

ParsedRequest parse_request(std::span<const std::string_view> frames, std::size_t max_request_bytes,
                            std::size_t total_frames) {
  using zmqio::FrameReject;
  ParsedRequest out;
  if (frames.size() >= 2) out.id = decode_request_header(frames[1]);
  const auto reject = [&](FrameReject why, RpcStatus status, std::string error) {
    out.reject = why;
    out.status = status;
    out.error = std::move(error);
    return out;
  };
  if (total_frames == 0) total_frames = frames.size();
  if (frames.size() != kRequestFrames || total_frames != kRequestFrames) {
    return reject(FrameReject::kFrameCount, RpcStatus::kMalformed,
                  "expected " + std::to_string(kRequestFrames) +
                      " frames (empty delimiter, header, payload), got " +
                      std::to_string(std::max(total_frames, frames.size())));
  }
  if (!frames[0].empty()) {
    return reject(FrameReject::kDelimiter, RpcStatus::kMalformed, "first frame must be empty");
  }
  if (!out.id) {
    return reject(FrameReject::kHeader, RpcStatus::kMalformed,
                  "header frame must be 9 bytes: protocol version " +
                      std::to_string(kProtocolVersion) + " and a 64-bit request id");
  }
  if (frames[2].size() > max_request_bytes) {
    return reject(FrameReject::kTooLarge, RpcStatus::kTooLarge,
                  "payload of " + std::to_string(frames[2].size()) +
                      " bytes exceeds max_request_bytes " + std::to_string(max_request_bytes));
  }
  out.payload = frames[2];
  return out;
}

std::optional<ParsedReply> parse_reply(std::span<const std::string_view> frames) {
  if (frames.size() != kReplyFrames || !frames[0].empty()) return std::nullopt;
  const auto header = decode_reply_header(frames[1]);
  if (!header) return std::nullopt;
  return ParsedReply{*header, frames[2]};
}

}  // namespace detail
}  // namespace spotlight::rpc
