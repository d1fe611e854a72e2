#include "services/planner/redis_explorer_directory.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "common/clock/unix_time.hpp"
#include "common/redis/errors.hpp"
#include "common/store/errors.hpp"
#include "common/wire/error.hpp"
#include "common/wire/messages.hpp"

namespace spotlight::planner {
namespace {

constexpr std::size_t kMget = 256;  // keys per MGET

// Field `name` of an XINFO reply map (flat name/value array); nullptr when absent.
const redis::Reply* info_field(const redis::Reply::Array& fields, std::string_view name) {
  for (std::size_t i = 0; i + 1 < fields.size(); i += 2) {
    if (fields[i].is_string() || fields[i].is_status()) {
      if (fields[i].as_text() == name) return &fields[i + 1];
    }
  }
  return nullptr;
}

// The heartbeat time of an explorer's heartbeat record; nullopt for anything else (an older
// encoding, garbage): such an explorer is not judged dead or alive by it.
std::optional<std::int64_t> heartbeat_unix_ms(const std::string& value) {
  try {
    return wire::Heartbeat::decode(value).unix_ms;
  } catch (const wire::WireError&) {
    return std::nullopt;
  }
}

}  // namespace

RedisExplorerDirectory::RedisExplorerDirectory(redis::RedisOptions redis, run::RunKeys keys,
                                               const queue::LeaseQueueOptions& queue,
                                               std::chrono::milliseconds heartbeat_window)
    : RedisExplorerDirectory(redis::RedisClient(std::move(redis)), std::move(keys), queue,
                             heartbeat_window) {}

RedisExplorerDirectory::RedisExplorerDirectory(redis::RedisClient client, run::RunKeys keys,
                                               const queue::LeaseQueueOptions& queue,
                                               std::chrono::milliseconds heartbeat_window)
    : client_(std::move(client)),
      keys_(std::move(keys)),
      stream_(queue.key_prefix + ":" + queue.stream),
      group_(queue.group),
      heartbeat_window_(heartbeat_window) {}

RedisExplorerDirectory::~RedisExplorerDirectory() = default;

std::vector<exploration::ExplorerSeen> RedisExplorerDirectory::explorers() {
  try {
    std::vector<exploration::ExplorerSeen> out;
    try {
      const redis::Reply r = client_.command({"XINFO", "CONSUMERS", stream_, group_});
      for (const auto& consumer : r.as_array()) {
        const auto& fields = consumer.as_array();
        const redis::Reply* name = info_field(fields, "name");
        if (name == nullptr || name->as_text().empty() || name->as_text().front() == '~') continue;
        const redis::Reply* pending = info_field(fields, "pending");
        out.push_back(exploration::ExplorerSeen{name->as_text(), std::nullopt,
                                                pending != nullptr ? pending->as_integer() : 0});
      }
    } catch (const redis::RedisCommandError& e) {
      // No stream or no group yet: nobody has leased anything.
      if (e.message().find("no such key") == std::string::npos && e.code() != "NOGROUP") {
        throw;
      }
    }
    // Explorers that have not leased anything yet are not consumers (Redis 7 creates a consumer
    // only when XREADGROUP delivers to it): find them by their heartbeat keys.
    std::string cursor = "0";
    do {
      const redis::Reply r = client_.command(
          {"SCAN", cursor, "MATCH", keys_.explorer_heartbeat_pattern(), "COUNT", "1000"});
      const auto& parts = r.as_array();
      cursor = parts.at(0).as_text();
      for (const auto& key : parts.at(1).as_array()) {
        auto found = keys_.explorer_of_heartbeat(key.as_text());
        if (!found || found->empty() || found->front() == '~') continue;
        std::string id = std::move(*found);
        if (std::none_of(out.begin(), out.end(), [&](const auto& e) { return e.id == id; })) {
          out.push_back(
              exploration::ExplorerSeen{std::move(id), std::nullopt, -1});  // -1: by heartbeat only
        }
      }
    } while (cursor != "0");
    for (std::size_t begin = 0; begin < out.size(); begin += kMget) {
      const std::size_t end = std::min(out.size(), begin + kMget);
      std::vector<std::string> argv = {"MGET"};
      for (std::size_t i = begin; i < end; ++i)
        argv.push_back(keys_.absolute(keys_.explorer_heartbeat(out[i].id)));
      const redis::Reply r = client_.command(argv);
      const auto& values = r.as_array();
      for (std::size_t i = begin; i < end && i - begin < values.size(); ++i) {
        if (const auto value = values[i - begin].as_optional_string()) {
          out[i].heartbeat_unix_ms = heartbeat_unix_ms(*value);
        }
      }
    }
    const auto now_ms = clock::unix_ms();
    std::erase_if(out, [&](exploration::ExplorerSeen& e) {
      if (e.leases >= 0) return false;
      e.leases = 0;
      return !e.heartbeat_unix_ms || now_ms - *e.heartbeat_unix_ms > heartbeat_window_.count();
    });
    return out;
  } catch (const redis::RedisError& e) {
    store::throw_store_error("explorer directory " + stream_, e);
  }
}

}  // namespace spotlight::planner
