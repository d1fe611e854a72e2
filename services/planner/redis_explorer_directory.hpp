#pragma once
// ExplorerDirectory on Redis, without KEYS or SCAN: the explorers are the consumers of the lease
// queue's consumer group (an explorer becomes one on its first lease() call, even one that
// returns nothing; reclaim_from() of a dead explorer removes it once it holds nothing).
//
//   ids, leases = XINFO CONSUMERS <queue key_prefix>:<stream> <group>   (names starting with '~'
//                                                                        are the queue's own)
//   heartbeats  = MGET <keys.prefix>:<keys.explorer_heartbeat(id)> for those ids
//
// So an explorer that has never asked for a lease is not listed (it holds nothing to reap and
// adds no capacity yet). This reads the queue's Redis layout (common/queue/lease_queue.hpp:
// "<key_prefix>:<stream>"), which the LeaseQueue interface does not expose.
// Redis errors are translated: RedisUnavailable -> store::StoreUnavailable, others ->
// store::StoreError; a queue that does not exist yet has no explorers. Connects on first use.
// Thread-compatible (one connection).

#include "common/queue/lease_queue.hpp"
#include "common/redis/client.hpp"
#include "services/planner/explorer_directory.hpp"
#include "services/planner/planner_keys.hpp"

namespace spotlight::planner {

class RedisExplorerDirectory final : public ExplorerDirectory {
 public:
  RedisExplorerDirectory(redis::RedisOptions redis, PlannerKeys keys,
                         queue::LeaseQueueOptions queue);
  RedisExplorerDirectory(redis::RedisClient client, PlannerKeys keys,
                         queue::LeaseQueueOptions queue);
  ~RedisExplorerDirectory() override;

  std::vector<ExplorerSeen> explorers() override;

 private:
  redis::RedisClient client_;
  PlannerKeys keys_;
  std::string stream_;
  std::string group_;
};

}  // namespace spotlight::planner
