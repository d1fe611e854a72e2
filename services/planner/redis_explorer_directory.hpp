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
//               + SCAN MATCH keys.explorer_heartbeat_pattern()         (incremental, no KEYS)
//   heartbeats  = MGET keys.absolute(keys.explorer_heartbeat(id)) for those ids, each a
//                 wire::Heartbeat (anything else: no readable heartbeat)
// This reads the queue's Redis layout (common/queue/lease_queue.hpp: "<key_prefix>:<stream>"),
// which the LeaseQueue interface does not expose.
// Redis errors are translated by store::throw_store_error (RedisUnavailable ->
// store::StoreUnavailable, RedisAuthError -> store::StoreAccessDenied, others ->
// store::StoreError); a queue that does not exist yet has no explorers. Connects on first use.
// Thread-compatible (one connection).

#include "common/exploration/explorer_directory.hpp"
#include "common/queue/lease_queue.hpp"
#include "common/redis/client.hpp"
#include "common/run/run_keys.hpp"

namespace spotlight::planner {

inline constexpr std::chrono::milliseconds kDefaultHeartbeatWindow{3000};

class RedisExplorerDirectory final : public exploration::ExplorerDirectory {
 public:
  RedisExplorerDirectory(redis::RedisOptions redis, run::RunKeys keys,
                         const queue::LeaseQueueOptions& queue,
                         std::chrono::milliseconds heartbeat_window = kDefaultHeartbeatWindow);
  RedisExplorerDirectory(redis::RedisClient client, run::RunKeys keys,
                         const queue::LeaseQueueOptions& queue,
                         std::chrono::milliseconds heartbeat_window = kDefaultHeartbeatWindow);
  ~RedisExplorerDirectory() override;

  std::vector<exploration::ExplorerSeen> explorers() override;

 private:
  redis::RedisClient client_;
  run::RunKeys keys_;
  std::string stream_;
  std::string group_;
  std::chrono::milliseconds heartbeat_window_;
};

}  // namespace spotlight::planner
