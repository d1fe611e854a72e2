#pragma once
// Which explorers there are and when each last sent a heartbeat: what the planner needs to count
// live capacity and to find explorers that died holding leases (explorer_reaper.hpp).
//
// Explorers write a heartbeat (wall-clock Unix ms) every explorer.heartbeat_ms; on Redis it is
// the run's wire::Heartbeat record (common/run/run_keys.hpp). Without a registry of explorer ids,
// a directory finds them where they show up anyway: as consumers of the lease queue.
//
// Errors: store::StoreUnavailable when the backing store cannot be reached (back off, retry),
// store::StoreError otherwise. Thread-compatible: one object per thread.

#include <cstdint>
#include <optional>
#include <string>
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

}  // namespace spotlight::exploration
