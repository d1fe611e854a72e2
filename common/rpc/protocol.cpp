#include "common/rpc/detail/protocol.hpp"

#include "common/bus/detail/zmq_support.hpp"

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
  return std::string(1, static_cast<char>(kProtocolVersion)) + bus::detail::encode_u64(id);
}

std::optional<std::uint64_t> decode_request_header(std::string_view header) {
  if (header.size() != 9 || static_cast<std::uint8_t>(header[0]) != kProtocolVersion) {
    return std::nullopt;
  }
  return bus::detail::decode_u64(header.substr(1));
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

}  // namespace detail
}  // namespace spotlight::rpc
