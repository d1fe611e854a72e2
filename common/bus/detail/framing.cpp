#include "common/bus/detail/framing.hpp"

#include "common/bus/errors.hpp"

namespace spotlight::bus::detail {

void check_topic(std::string_view topic) {
  if (topic.empty()) throw InvalidTopic("bus topic must not be empty");
  if (static_cast<unsigned char>(topic.front()) == 0xff) {
    throw InvalidTopic("bus topic must not start with byte 0xFF (reserved for control messages)");
  }
}

ParsedNotice parse_notice(std::span<const std::string_view> frames) {
  ParsedNotice out;
  if (frames.size() != kNoticeFrames) {
    out.reject = FrameReject::kFrameCount;
    return out;
  }
  const auto version = zmqio::decode_u64(frames[1]);
  if (!version) {
    out.reject = FrameReject::kHeader;
    return out;
  }
  out.topic = frames[0];
  out.version = *version;
  out.payload = frames[2];
  out.control = out.topic.starts_with(kAckTopicPrefix);
  return out;
}

std::optional<Subscription> parse_subscription(std::string_view frame) {
  if (frame.empty()) return std::nullopt;
  const auto kind = static_cast<unsigned char>(frame.front());
  if (kind != 0 && kind != 1) return std::nullopt;
  return Subscription{kind == 1, frame.substr(1)};
}

}  // namespace spotlight::bus::detail
