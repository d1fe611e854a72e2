#include "services/explorer/explorer_options.hpp"

#include <cstdio>
#include <stdexcept>

#include <unistd.h>

#include "common/run/run_config.hpp"

namespace spotlight::explorer {
namespace {

void require(bool ok, const char* field, const char* why) {
  if (!ok) throw std::invalid_argument(std::string("ExplorerOptions.") + field + ": " + why);
}

}  // namespace

void ExplorerOptions::validate() const {
  using std::chrono::milliseconds;
  require(!id.empty(), "id", "must not be empty");
  require(id.front() != '~', "id", "must not start with '~' (reserved by the queue)");
  require(!run_id.empty(), "run_id", "must not be empty");
  require(batch >= 1, "batch", "must be >= 1");
  require(chunk >= 0, "chunk", "must be >= 0");
  require(max_staleness >= 0, "max_staleness", "must be >= 0");
  require(iterations >= 1, "iterations", "must be >= 1");
  require(limits.run_id == run_id, "limits.run_id", "must be run_id");
  require(sampler.noise_level >= 0, "sampler.noise_level", "must be >= 0");
  require(heartbeat_interval > milliseconds(0), "heartbeat_interval", "must be > 0");
  require(lease_timeout > milliseconds(0), "lease_timeout", "must be > 0");
  require(block_timeout >= milliseconds(0), "block_timeout", "must be >= 0");
  require(reclaim_interval >= milliseconds(0), "reclaim_interval", "must be >= 0");
  require(weights_retry_interval >= milliseconds(0), "weights_retry_interval", "must be >= 0");
  require(finish_poll_interval >= milliseconds(0), "finish_poll_interval", "must be >= 0");
  require(min_backoff > milliseconds(0), "min_backoff", "must be > 0");
  require(max_backoff >= min_backoff, "max_backoff", "must be >= min_backoff");
  require(grace_period > milliseconds(0), "grace_period", "must be > 0");
  require(sample_images_every >= 0, "sample_images_every", "must be >= 0");
}

std::string default_explorer_id() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') {
    std::snprintf(host, sizeof host, "explorer");
  }
  return std::string(host) + "-" + std::to_string(::getpid());
}

ExplorerOptions explorer_options(const config::Config& c) {
  const run::ExplorationOptions exploration = run::exploration_options(c);
  ExplorerOptions o;
  o.id = c.get_string("explorer.id");
  if (o.id.empty()) o.id = default_explorer_id();
  o.run_id = c.get_string("run.id");
  o.batch = c.get<int>("explorer.batch");
  o.max_staleness = c.get_int("explorer.max_staleness");
  o.iterations = c.get_int("trainer.iterations");
  o.limits = run::task_limits(c);
  o.sampler = run::sampler_options(c);
  o.sampler.sde = true;
  o.sampler.keep_trajectory = false;
  o.heartbeat_interval = std::chrono::milliseconds(c.get_int("explorer.heartbeat_ms"));
  o.lease_timeout = exploration.lease_timeout;
  o.grace_period = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::duration<double>(c.get_double("explorer.grace_seconds")));
  o.commit_inflight = c.get_bool("explorer.commit_inflight");
  o.sample_images_every = exploration.sample_images_every;
  const auto backoff = run::redis_backoff(c);
  o.min_backoff = backoff.initial;
  o.max_backoff = backoff.max;
  o.validate();
  return o;
}

}  // namespace spotlight::explorer
