#pragma once
// A notice on the bus: "topic is now at version, here is its payload". Payloads are opaque bytes
// (msgpack from common/wire in practice). Notices are announcements, never the only copy of
// anything: the durable state lives in the snapshot source (Redis), see versioned_follower.hpp.

#include <cstdint>
#include <string>

namespace spotlight::bus {

struct Notice {
  std::string topic;
  // Per-topic version; 0 means "no version" (a versioned topic starts at 1).
  std::uint64_t version = 0;
  std::string payload;

  friend bool operator==(const Notice&, const Notice&) = default;
};

}  // namespace spotlight::bus
