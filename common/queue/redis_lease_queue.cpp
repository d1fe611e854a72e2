#include "common/queue/redis_lease_queue.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <type_traits>
#include <utility>

#include "common/queue/lua_scripts.hpp"  // generated from common/queue/lua/*.lua

namespace spotlight::queue {
namespace {

using redis::Reply;
using redis::Script;

// The scripts of common/queue/lua/ (their KEYS and ARGV are named at the top of each file), each
// loaded once per connection (see redis::Script).
struct Scripts {
  Script enqueue{lua::kEnqueue};
  Script lease_now{lua::kLeaseNow};
  Script complete{lua::kComplete};
  Script fail{lua::kFail};
  Script release{lua::kRelease};
  Script extend{lua::kExtend};
  Script reclaim{lua::kReclaim};
  Script reclaim_from{lua::kReclaimFrom};
  Script stats{lua::kStats};
  Script quarantine{lua::kQuarantine};
  Script purge{lua::kPurge};
  Script abandoned{lua::kAbandoned};
  Script reconcile{lua::kReconcile};
};

const Scripts& scripts() {
  static const Scripts all;
  return all;
}

// Owner of leases given back by fail() or release() until the next reclaim() re-delivers them, so
// that their former holder no longer holds them (extend() and release() by it return false).
constexpr std::string_view kParkingConsumer = "~released";
constexpr std::size_t kEnqueueBatch = 256;  // tasks per enqueue script call
constexpr int kScanCount = 256;

std::string field(const Reply::Array& fields, std::string_view name) {
  for (std::size_t i = 0; i + 1 < fields.size(); i += 2) {
    if (fields[i].as_string() == name) return fields[i + 1].as_string();
  }
  return {};
}

// The first max_count entries of stream `key`, oldest first, each made by make(id, fields).
template <class Make>
auto read_stream(redis::RedisClient& client, const std::string& key, int max_count, Make make) {
  const Reply r = client.command({"XRANGE", key, "-", "+", "COUNT", std::to_string(max_count)});
  std::vector<std::invoke_result_t<Make, std::string, const Reply::Array&>> out;
  for (const Reply& entry : r.as_array()) {
    const auto& e = entry.as_array();
    out.push_back(make(e.at(0).as_string(), e.at(1).as_array()));
  }
  return out;
}

// Script replies {{id, task, payload, count}, ...} -> leases held by `consumer`.
std::vector<Lease> parse_script_leases(const Reply& reply, std::string_view consumer) {
  std::vector<Lease> leases;
  for (const Reply& item : reply.as_array()) {
    const auto& a = item.as_array();
    leases.push_back(Lease{a.at(0).as_string(), a.at(1).as_string(), a.at(2).as_string(),
                           std::string(consumer), a.at(3).as_integer()});
  }
  return leases;
}

void check_count(int max_count, const char* operation) {
  if (max_count < 1) {
    throw QueueError(std::string("lease queue ") + operation + ": max_count must be >= 1, got " +
                     std::to_string(max_count));
  }
}

}  // namespace

void LeaseQueueOptions::validate() const {
  if (key_prefix.empty()) throw InvalidQueueOptions("key_prefix", "must not be empty");
  const std::pair<const char*, const std::string*> names[] = {
      {"stream", &stream},
      {"group", &group},
      {"dead_letter_stream", &dead_letter_stream},
      {"results", &results}};
  for (const auto& [name, value] : names) {
    if (value->empty()) throw InvalidQueueOptions(name, "must not be empty");
    if (*value == "index" || *value == "errors" || *value == "stats" || *value == "payloads" ||
        *value == "quarantine" || *value == "notices" || *value == "purged" ||
        *value == "dead_ids") {
      throw InvalidQueueOptions(name, "'" + *value + "' is reserved");
    }
  }
  if (stream == dead_letter_stream || stream == results || dead_letter_stream == results) {
    throw InvalidQueueOptions("stream", "stream, dead_letter_stream and results must differ");
  }
  if (lease_timeout.count() <= 0) throw InvalidQueueOptions("lease_timeout", "must be > 0");
  if (block_timeout.count() < 0) throw InvalidQueueOptions("block_timeout", "must be >= 0");
  if (max_deliveries < 1) throw InvalidQueueOptions("max_deliveries", "must be >= 1");
}

RedisLeaseQueue::RedisLeaseQueue(redis::RedisOptions redis, LeaseQueueOptions options)
    : RedisLeaseQueue(redis::RedisClient(std::move(redis)), std::move(options)) {}

RedisLeaseQueue::RedisLeaseQueue(redis::RedisClient client, LeaseQueueOptions options)
    : options_(std::move(options)), client_(std::move(client)) {
  options_.validate();
  const std::string& p = options_.key_prefix;
  keys_ = Keys{p + ":" + options_.stream,
               p + ":" + options_.dead_letter_stream,
               p + ":" + options_.results,
               p + ":index",
               p + ":errors",
               p + ":stats",
               p + ":payloads",
               p + ":quarantine",
               p + ":notices",
               p + ":purged",
               p + ":dead_ids"};
}

RedisLeaseQueue::~RedisLeaseQueue() = default;

std::array<std::string_view, 6> RedisLeaseQueue::Keys::dead_letter() const {
  return {stream, dead, errors, stats, dead_ids, notices};
}

void RedisLeaseQueue::ensure_group() {
  if (group_ready_) return;
  try {
    client_.command({"XGROUP", "CREATE", keys_.stream, options_.group, "0", "MKSTREAM"});
  } catch (const redis::RedisCommandError& e) {
    if (e.code() != "BUSYGROUP") throw;
  }
  group_ready_ = true;
}

template <typename Fn>
auto RedisLeaseQueue::call(Fn&& fn) -> decltype(fn()) {
  try {
    ensure_group();
    try {
      return fn();
    } catch (const redis::RedisCommandError& e) {
      // The group vanished (keys deleted, a Redis without persistence restarted): every
      // operation is safe to run again once it exists.
      if (e.message().find("NOGROUP") == std::string::npos) throw;
      group_ready_ = false;
      ensure_group();
      return fn();
    }
  } catch (const redis::RedisError& e) {
    // Unavailable: maybe a different server when we reconnect, so check the group again.
    if (e.code() == error::ErrorCode::kUnavailable) group_ready_ = false;
    throw_queue_error("lease queue " + keys_.stream, e);
  }
}

EnqueueResult RedisLeaseQueue::enqueue(std::string_view task_id, std::string_view payload) {
  return call([&] {
    const Reply r =
        client_.eval(scripts().enqueue, {keys_.stream, keys_.index, keys_.stats, keys_.payloads},
                     {task_id, payload});
    const auto& item = r.as_array().at(0).as_array();
    return EnqueueResult{item.at(0).as_string(), item.at(1).as_integer() == 1};
  });
}

std::int64_t RedisLeaseQueue::enqueue_many(std::span<const Task> tasks) {
  return call([&] {
    std::int64_t added = 0;
    const std::string_view keys[] = {keys_.stream, keys_.index, keys_.stats, keys_.payloads};
    std::vector<std::string_view> args;
    for (std::size_t begin = 0; begin < tasks.size(); begin += kEnqueueBatch) {
      const std::size_t end = std::min(tasks.size(), begin + kEnqueueBatch);
      args.clear();
      for (std::size_t i = begin; i < end; ++i) {
        args.push_back(tasks[i].task_id);
        args.push_back(tasks[i].payload);
      }
      const Reply r = client_.eval(scripts().enqueue, keys, args);
      for (const Reply& item : r.as_array())
        added += item.as_array().at(1).as_integer();
    }
    return added;
  });
}

std::vector<Lease> RedisLeaseQueue::lease(std::string_view consumer, int max_count,
                                          std::chrono::milliseconds block_timeout) {
  check_count(max_count, "lease");
  return call([&] {
    const std::string count = std::to_string(max_count);
    const auto to_leases = [&](const Reply::Array& entries) {
      std::vector<Lease> leases;
      for (const Reply& entry : entries) {
        const auto& e = entry.as_array();
        if (e.size() < 2 || !e[1].is_array()) continue;
        const auto& fields = e[1].as_array();
        leases.push_back(Lease{e[0].as_string(), field(fields, "task"), field(fields, "payload"),
                               std::string(consumer), 1});
      }
      return leases;
    };
    // Busy path: whatever is waiting now, counted atomically.
    std::vector<Lease> leases =
        to_leases(client_
                      .eval(scripts().lease_now, {keys_.stream, keys_.stats},
                            {options_.group, consumer, count})
                      .as_array());
    if (!leases.empty() || block_timeout.count() <= 0) return leases;

    // Idle path: block for the first arrival (the socket timeout outlasts the BLOCK).
    const std::string block = std::to_string(block_timeout.count());
    const std::string_view argv[] = {"XREADGROUP", "GROUP", options_.group, consumer,  "COUNT",
                                     count,        "BLOCK", block,          "STREAMS", keys_.stream,
                                     ">"};
    const Reply r =
        client_.command_with_timeout(argv, block_timeout + client_.options().command_timeout);
    for (const Reply& stream : r.as_array_or_empty()) {
      leases = to_leases(stream.as_array().at(1).as_array());
    }
    if (!leases.empty()) {
      client_.command({"HINCRBY", keys_.stats, "leased", std::to_string(leases.size())});
    }
    return leases;
  });
}

Completion RedisLeaseQueue::complete(const Lease& lease, std::string_view result) {
  return call([&] {
    const Reply r =
        client_.eval(scripts().complete, {keys_.stream, keys_.results, keys_.stats, keys_.notices},
                     {options_.group, lease.entry_id, lease.task_id, result});
    const auto& a = r.as_array();
    return Completion{a.at(0).as_integer() == 1, a.at(1).as_integer() == 1};
  });
}

FailOutcome RedisLeaseQueue::fail(const Lease& lease, std::string_view error) {
  return fail_with(lease, error, options_.max_deliveries);
}

FailOutcome RedisLeaseQueue::reject(const Lease& lease, std::string_view error) {
  return fail_with(lease, error, 0);  // every delivery count is at the limit
}

FailOutcome RedisLeaseQueue::fail_with(const Lease& lease, std::string_view error,
                                       int max_deliveries) {
  return call([&] {
    const std::string max = std::to_string(max_deliveries);
    const std::string idle = std::to_string(options_.lease_timeout.count());
    const std::string_view args[] = {options_.group, lease.entry_id,  lease.task_id,
                                     lease.consumer, error,           max,
                                     idle,           kParkingConsumer};
    const Reply r = client_.eval(scripts().fail, keys_.dead_letter(), args);
    const std::string& outcome = r.as_text();
    if (outcome == "retry") return FailOutcome::kRetry;
    if (outcome == "dead") return FailOutcome::kDeadLettered;
    return FailOutcome::kNotHeld;
  });
}

bool RedisLeaseQueue::release(const Lease& lease) {
  return call([&] {
    const std::string idle = std::to_string(options_.lease_timeout.count());
    return client_
               .eval(scripts().release, {keys_.stream},
                     {options_.group, lease.entry_id, lease.consumer, idle, kParkingConsumer})
               .as_integer() == 1;
  });
}

bool RedisLeaseQueue::extend(const Lease& lease) {
  return call([&] {
    return client_
               .eval(scripts().extend, {keys_.stream},
                     {options_.group, lease.entry_id, lease.consumer})
               .as_integer() == 1;
  });
}

std::vector<Lease> RedisLeaseQueue::reclaim(std::string_view consumer,
                                            std::chrono::milliseconds min_idle, int max_count) {
  check_count(max_count, "reclaim");
  return call([&] {
    const std::string idle = std::to_string(std::max<std::int64_t>(min_idle.count(), 0));
    const std::string count = std::to_string(max_count);
    const std::string max = std::to_string(options_.max_deliveries);
    const std::string_view args[] = {options_.group, consumer, idle, count, max};
    const Reply r = client_.eval(scripts().reclaim, keys_.dead_letter(), args);
    return parse_script_leases(r, consumer);
  });
}

std::vector<Lease> RedisLeaseQueue::reclaim_from(std::string_view dead_consumer,
                                                 std::string_view consumer, int max_count) {
  check_count(max_count, "reclaim_from");
  return call([&] {
    const std::string count = std::to_string(max_count);
    const std::string max = std::to_string(options_.max_deliveries);
    const std::string_view args[] = {options_.group, dead_consumer, consumer, count, max};
    const Reply r = client_.eval(scripts().reclaim_from, keys_.dead_letter(), args);
    return parse_script_leases(r, consumer);
  });
}

std::optional<std::string> RedisLeaseQueue::result(std::string_view task_id) {
  return call([&] {
    return client_.command({"HGET", keys_.results, task_id}).as_optional_string();
  });
}

std::vector<std::optional<std::string>> RedisLeaseQueue::results(
    std::span<const std::string> task_ids) {
  std::vector<std::optional<std::string>> out;
  if (task_ids.empty()) return out;
  return call([&] {
    std::vector<std::string> argv{"HMGET", keys_.results};
    argv.insert(argv.end(), task_ids.begin(), task_ids.end());
    const Reply r = client_.command(argv);
    out.clear();
    for (const Reply& item : r.as_array())
      out.push_back(item.as_optional_string());
    if (out.size() != task_ids.size()) {
      throw QueueError("lease queue " + keys_.results + ": HMGET answered " +
                       std::to_string(out.size()) + " values for " +
                       std::to_string(task_ids.size()) + " fields");
    }
    return out;
  });
}

bool RedisLeaseQueue::wait_result_notice(std::chrono::milliseconds timeout) {
  return call([&] {
    // BLPOP takes seconds (fractions allowed); 0 would block forever.
    const std::chrono::milliseconds block = std::max(timeout, std::chrono::milliseconds(1));
    const std::string seconds = std::to_string(static_cast<double>(block.count()) / 1000.0);
    const std::string_view argv[] = {"BLPOP", keys_.notices, seconds};
    const Reply r = client_.command_with_timeout(argv, block + client_.options().command_timeout);
    return !r.is_nil();
  });
}

std::vector<std::string> RedisLeaseQueue::purge(std::span<const std::string> task_ids,
                                                std::string_view reason) {
  std::vector<std::string> out;
  if (task_ids.empty()) return out;
  return call([&] {
    ensure_group();
    const std::array<std::string_view, 5> keys{keys_.stream, keys_.index, keys_.purged, keys_.stats,
                                               keys_.notices};
    std::vector<std::string_view> argv{options_.group, reason};
    argv.insert(argv.end(), task_ids.begin(), task_ids.end());
    const Reply r = client_.eval(scripts().purge, keys, argv);
    out.clear();
    for (const Reply& id : r.as_array())
      out.push_back(id.as_string());
    return out;
  });
}

std::vector<std::optional<Abandoned>> RedisLeaseQueue::abandoned(
    std::span<const std::string> task_ids) {
  std::vector<std::optional<Abandoned>> out;
  if (task_ids.empty()) return out;
  return call([&] {
    const std::vector<std::string_view> argv(task_ids.begin(), task_ids.end());
    const std::array<std::string_view, 2> keys{keys_.purged, keys_.dead_ids};
    const Reply r = client_.eval(scripts().abandoned, keys, argv);
    const auto& purged = r.as_array().at(0).as_array_or_empty();
    const auto& dead = r.as_array().at(1).as_array_or_empty();
    if (purged.size() != task_ids.size() || dead.size() != task_ids.size()) {
      throw QueueError("lease queue " + keys_.stream + ": abandoned() answered " +
                       std::to_string(purged.size()) + "/" + std::to_string(dead.size()) +
                       " values for " + std::to_string(task_ids.size()) + " task ids");
    }
    out.clear();
    for (std::size_t i = 0; i < task_ids.size(); ++i) {
      if (auto reason = purged[i].as_optional_string()) {
        out.emplace_back(Abandoned{Abandonment::kPurged, std::move(*reason)});
      } else if (auto error = dead[i].as_optional_string()) {
        out.emplace_back(Abandoned{Abandonment::kDeadLettered, std::move(*error)});
      } else {
        out.emplace_back();
      }
    }
    return out;
  });
}

Reconciliation RedisLeaseQueue::reconcile(std::span<const std::string> task_ids) {
  return call([&] {
    const std::array<std::string_view, 10> keys{
        keys_.stream,  keys_.dead,    keys_.errors, keys_.stats,    keys_.dead_ids,
        keys_.notices, keys_.results, keys_.index,  keys_.payloads, keys_.purged};
    const std::string idle = std::to_string(options_.lease_timeout.count());
    std::vector<std::string_view> argv{options_.group, idle};
    argv.insert(argv.end(), task_ids.begin(), task_ids.end());
    const Reply r = client_.eval(scripts().reconcile, keys, argv);
    const auto& a = r.as_array();
    Reconciliation out;
    for (const Reply& id : a.at(0).as_array_or_empty())
      out.requeued.push_back(id.as_string());
    for (const Reply& id : a.at(1).as_array_or_empty())
      out.lost.push_back(id.as_string());
    out.settled = a.at(2).as_integer();
    return out;
  });
}

QuarantineOutcome RedisLeaseQueue::quarantine(std::string_view task_id, std::string_view result,
                                              std::string_view reason) {
  return call([&] {
    const Reply r = client_.eval(scripts().quarantine,
                                 {keys_.stream, keys_.results, keys_.index, keys_.payloads,
                                  keys_.quarantine, keys_.stats, keys_.dead_ids},
                                 {task_id, result, reason});
    const auto& a = r.as_array();
    return QuarantineOutcome{a.at(0).as_integer() == 1, a.at(1).as_integer() == 1,
                             a.at(2).as_integer() == 1};
  });
}

std::vector<QuarantinedResult> RedisLeaseQueue::quarantined(int max_count) {
  check_count(max_count, "quarantined");
  return call([&] {
    return read_stream(client_, keys_.quarantine, max_count,
                       [](std::string id, const Reply::Array& fields) {
                         return QuarantinedResult{std::move(id), field(fields, "task"),
                                                  field(fields, "reason"), field(fields, "result")};
                       });
  });
}

std::int64_t RedisLeaseQueue::result_count() {
  return call([&] { return client_.command({"HLEN", keys_.results}).as_integer(); });
}

void RedisLeaseQueue::for_each_result(
    const std::function<void(std::string_view, std::string_view)>& fn) {
  call([&] {
    std::string cursor = "0";
    const std::string count = std::to_string(kScanCount);
    do {
      const Reply r = client_.command({"HSCAN", keys_.results, cursor, "COUNT", count});
      const auto& a = r.as_array();
      cursor = a.at(0).as_string();
      const auto& items = a.at(1).as_array();
      for (std::size_t i = 0; i + 1 < items.size(); i += 2) {
        fn(items[i].as_string(), items[i + 1].as_string());
      }
    } while (cursor != "0");
  });
}

std::optional<std::string> RedisLeaseQueue::last_error(std::string_view task_id) {
  return call([&] {
    return client_.command({"HGET", keys_.errors, task_id}).as_optional_string();
  });
}

std::vector<DeadLetter> RedisLeaseQueue::dead_letters(int max_count) {
  check_count(max_count, "dead_letters");
  return call([&] {
    return read_stream(client_, keys_.dead, max_count,
                       [](std::string id, const Reply::Array& fields) {
                         const std::string deliveries = field(fields, "deliveries");
                         return DeadLetter{std::move(id),
                                           field(fields, "task"),
                                           field(fields, "payload"),
                                           field(fields, "error"),
                                           field(fields, "consumer"),
                                           deliveries.empty() ? 0 : std::stoll(deliveries)};
                       });
  });
}

QueueStats RedisLeaseQueue::stats() {
  return call([&] {
    const Reply r = client_.eval(
        scripts().stats, {keys_.stream, keys_.dead, keys_.results, keys_.stats}, {options_.group});
    const auto& a = r.as_array();
    QueueStats s;
    s.length = a.at(0).as_integer();
    s.leased = a.at(1).as_integer();
    s.waiting = std::max<std::int64_t>(s.length - s.leased, 0);
    s.oldest_lease_age = std::chrono::milliseconds(a.at(2).as_integer());
    s.dead_letters = a.at(3).as_integer();
    s.results = a.at(4).as_integer();
    const auto& counters = a.at(5).as_array();
    for (std::size_t i = 0; i + 1 < counters.size(); i += 2) {
      const std::string& name = counters[i].as_string();
      const std::int64_t value = std::stoll(counters[i + 1].as_string());
      if (name == "enqueued") s.enqueued_total = value;
      if (name == "leased") s.leased_total = value;
      if (name == "acked") s.acked_total = value;
      if (name == "reclaimed") s.reclaimed_total = value;
      if (name == "failed") s.failed_total = value;
      if (name == "dead_lettered") s.dead_lettered_total = value;
      if (name == "duplicate_results") s.duplicate_results_total = value;
      if (name == "quarantined") s.quarantined_total = value;
      if (name == "requeued") s.requeued_total = value;
      if (name == "purged") s.purged_total = value;
      if (name == "reconciled") s.reconciled_total = value;
    }
    return s;
  });
}

void RedisLeaseQueue::destroy() {
  call([&] {
    client_.command({"DEL", keys_.notices, keys_.stream, keys_.dead, keys_.results, keys_.index,
                     keys_.errors, keys_.stats, keys_.payloads, keys_.quarantine, keys_.purged,
                     keys_.dead_ids});
    group_ready_ = false;
  });
}

}  // namespace spotlight::queue
