#pragma once
// Which explorers there are and when each last sent a heartbeat: what the planner needs to count
// live capacity and to find explorers that died holding leases (explorer_reaper.hpp).
//
// Explorers put RunKeys::explorer_heartbeat(id) = wall-clock Unix ms (decimal text) every
// explorer.heartbeat_ms (async_protocol.md). Without a registry of explorer ids, a directory
// finds them where they show up anyway: as consumers of the lease queue.
//
// Errors: store::StoreUnavailable when the backing store cannot be reached (back off, retry),
// store::StoreError otherwise. Thread-compatible: one object per thread.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spotlight::exploration {

struct ExplorerSeen {
  std::string id;
  // The last heartbeat (wall-clock Unix ms); nullopt: none, or not readable.
  std::optional<std::int64_t> heartbeat_unix_ms;
  std::int64_t leases = 0;  // leases it holds now
  bool operator==(const ExplorerSeen&) const = default;
};

class ExplorerDirectory {
 public:
  virtual ~ExplorerDirectory() = default;
  // The known explorers, each once, in no particular order.
  virtual std::vector<ExplorerSeen> explorers() = 0;
};

// The heartbeat value an explorer wrote: decimal Unix ms, or a msgpack wire::Heartbeat (its
// unix_ms). nullopt for anything else.
std::optional<std::int64_t> parse_heartbeat(std::string_view value);

}  // namespace spotlight::exploration
