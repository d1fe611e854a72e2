#pragma once
// The results a run's explore queue holds now (every one an explorer acknowledged), by task id:
// what end-to-end tests note before a kill and compare byte for byte after it.

#include <map>
#include <string>
#include <string_view>

#include "common/queue/redis_lease_queue.hpp"
#include "common/redis/client.hpp"

namespace spotlight::testing {

inline std::map<std::string, std::string> queue_results(const redis::RedisOptions& redis,
                                                        const queue::LeaseQueueOptions& queue) {
  std::map<std::string, std::string> results;
  queue::RedisLeaseQueue q(redis, queue);
  q.for_each_result([&](std::string_view id, std::string_view result) {
    results.emplace(std::string(id), std::string(result));
  });
  return results;
}

}  // namespace spotlight::testing
