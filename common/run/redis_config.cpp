#include <algorithm>

#include "common/run/run_config.hpp"

namespace spotlight::run {

using config::Entry;

const config::Schema& redis_schema() {
  static const config::Schema schema{
      Entry::string("redis.host", "127.0.0.1",
                    "Redis host (password: env SPOTLIGHT_REDIS_PASSWORD)."),
      Entry::integer("redis.port", 6379, "Redis port.").range(1, 65535),
      Entry::integer("redis.db", 0, "Redis database number.").range(0, 1024),
      Entry::integer("redis.command_timeout_ms", 5000, "Timeout of one Redis command.")
          .range(1, 3600000),
      Entry::integer("redis.retry_initial_ms", 100,
                     "First back-off after Redis is lost; doubles per failed attempt.")
          .range(1, 600000),
      Entry::integer("redis.retry_max_ms", 2000,
                     "Longest back-off between attempts while Redis is unavailable (bounds how "
                     "late a recovery is noticed).")
          .range(1, 600000),
  };
  return schema;
}

// The readers connect to Redis: not part of a core-only build.
#ifdef SPOTLIGHT_RUN_SERVICES
redis::RedisOptions redis_options(const config::Config& c) {
  redis::RedisOptions o;
  o.host = c.get_string("redis.host");
  o.port = c.get<int>("redis.port");
  o.db = c.get<int>("redis.db");
  o.command_timeout = std::chrono::milliseconds(c.get_int("redis.command_timeout_ms"));
  return redis::with_env_credentials(o);
}

outage::BackoffOptions redis_backoff(const config::Config& c) {
  outage::BackoffOptions o;
  o.initial = std::chrono::milliseconds(c.get_int("redis.retry_initial_ms"));
  o.max = std::max(o.initial, std::chrono::milliseconds(c.get_int("redis.retry_max_ms")));
  return o;
}

#endif

}  // namespace spotlight::run
