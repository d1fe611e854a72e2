#include "common/exploration/explorer_directory.hpp"

#include <charconv>

#include "common/wire/error.hpp"
#include "common/wire/messages.hpp"

namespace spotlight::exploration {

std::optional<std::int64_t> parse_heartbeat(std::string_view value) {
  std::int64_t ms = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
  if (ec == std::errc() && end == value.data() + value.size() && !value.empty()) return ms;
  try {
    return wire::Heartbeat::decode(value).unix_ms;
  } catch (const wire::WireError&) {
    return std::nullopt;
  }
}

}  // namespace spotlight::exploration
