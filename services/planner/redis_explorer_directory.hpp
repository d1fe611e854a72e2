#pragma once
// ExplorerDirectory on Redis: the explorers are the consumers of the lease queue's consumer group
// (reclaim_from() of a dead explorer removes it once it holds nothing) plus those whose heartbeat
// key exists: Redis 7 makes a consumer only when XREADGROUP delivers to it, so an explorer
// waiting on an empty queue is known by its heartbeat alone (and counts as capacity). Such an
// explorer holds no lease, so it is listed only while its heartbeat is younger than
// `heartbeat_window` (wall clock): a dead one has nothing to reap and drops out.
//
//   ids, leases = XINFO CONSUMERS <queue key_prefix>:<stream> <group>   (names starting with '~'
//                                                                        are the queue's own)
//               + SCAN MATCH <keys.prefix>:<keys.explorer_heartbeat(*)>  (incremental, no KEYS)
//   heartbeats  = MGET <keys.prefix>:<keys.explorer_heartbeat(id)> for those ids This reads the
//   queue's Redis layout (common/queue/lease_queue.hpp:
// "<key_prefix>:<stream>"), which the LeaseQueue interface does not expose.
// Redis errors are translated: RedisUnavailable -> store::StoreUnavailable, others ->
// store::StoreError; a queue that does not exist yet has no explorers. Connects on first use.
// Thread-compatible (one connection).

#include "common/exploration/explorer_directory.hpp"
#include "common/queue/lease_queue.hpp"
#include "common/redis/client.hpp"
#include "services/planner/planner_keys.hpp"

namespace spotlight::planner {

inline constexpr std::chrono::milliseconds kDefaultHeartbeatWindow{3000};

class RedisExplorerDirectory final : public exploration::ExplorerDirectory {
 public:
  RedisExplorerDirectory(redis::RedisOptions redis, PlannerKeys keys,
                         queue::LeaseQueueOptions queue,
                         std::chrono::milliseconds heartbeat_window = kDefaultHeartbeatWindow);
  RedisExplorerDirectory(redis::RedisClient client, PlannerKeys keys,
                         queue::LeaseQueueOptions queue,
                         std::chrono::milliseconds heartbeat_window = kDefaultHeartbeatWindow);
  ~RedisExplorerDirectory() override;

  std::vector<exploration::ExplorerSeen> explorers() override;

 private:
  redis::RedisClient client_;
  PlannerKeys keys_;
  std::string stream_;
  std::string group_;
  std::chrono::milliseconds heartbeat_window_;
};

}  // namespace spotlight::planner
