#include "common/queue/redis_lease_queue.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <utility>

namespace spotlight::queue {
namespace {

using redis::Reply;
using redis::Script;

// Shared by the scripts that dead-letter. KEYS[1] stream, KEYS[2] dead letters, KEYS[3] errors,
// KEYS[4] counters, KEYS[5] dead ids, KEYS[6] notices.
// A dead-lettered task is remembered (dead ids: task id -> error, for abandoned()) and rings the
// result bell, as a purge does: a trainer waiting for its result learns at once that none will
// come.
constexpr const char* kPrelude = R"lua(
local function field(fields, name)
  for i = 1, #fields, 2 do
    if fields[i] == name then return fields[i + 1] end
  end
  return ''
end
local function entry_fields(id)
  local e = redis.call('XRANGE', KEYS[1], id, id)
  if e[1] then return e[1][2] end
  return nil
end
-- Acknowledges and deletes entry `id`, or, when the caller may not acknowledge (the explorer role
-- of deploy/redis/users.acl has no XACK, XDEL), parks it under `parking` ('~done', '~dead') for
-- reconcile() to settle. True when it was acknowledged now.
local function settle(group, id, parking)
  if redis.acl_check_cmd('XACK', KEYS[1], group, id) then
    local n = redis.call('XACK', KEYS[1], group, id)
    redis.call('XDEL', KEYS[1], id)
    return n == 1
  end
  redis.call('XCLAIM', KEYS[1], group, parking, 0, id, 'JUSTID')
  return false
end
local function dead_letter(group, id, fields, deliveries, consumer, fallback_error)
  local task = field(fields, 'task')
  local err = redis.call('HGET', KEYS[3], task)
  if not err then err = fallback_error end
  redis.call('XADD', KEYS[2], '*', 'task', task, 'payload', field(fields, 'payload'),
             'error', err, 'deliveries', deliveries, 'consumer', consumer, 'entry', id)
  if settle(group, id, '~dead') then redis.call('HINCRBY', KEYS[4], 'dead_lettered', 1) end
  redis.call('HSET', KEYS[5], task, err)
  redis.call('LPUSH', KEYS[6], task)
  redis.call('LTRIM', KEYS[6], 0, 0)
end
-- Re-delivers pending entry p ({id, owner, idle, count}) to `consumer`, or dead-letters it when
-- it already had max_deliveries. Appends a re-delivered lease to `out`; returns 1 if it was.
-- Entries parked under '~done' or '~dead' wait for reconcile(): never re-delivered.
local function redeliver(group, p, consumer, min_idle, max_deliveries, out)
  local id, owner, count = p[1], p[2], p[4]
  if owner == '~done' or owner == '~dead' then return 0 end
  if count >= max_deliveries then
    local fields = entry_fields(id)
    if fields then
      dead_letter(group, id, fields, count, owner,
                  'lease expired after ' .. count .. ' deliveries (last holder ' .. owner .. ')')
    else
      settle(group, id, '~dead')
    end
    return 0
  end
  local c = redis.call('XCLAIM', KEYS[1], group, consumer, min_idle, id)
  if c[1] and c[1][2] then
    out[#out + 1] = {id, field(c[1][2], 'task'), field(c[1][2], 'payload'), count + 1}
    return 1
  end
  return 0
end
)lua";

// KEYS: stream, index, counters, payloads. ARGV: task_1, payload_1, task_2, payload_2, ...
// Returns {{entry_id, 1 if new else 0}, ...}. The payload is kept (payloads) for quarantine().
constexpr const char* kEnqueueLua = R"lua(
local out, added = {}, 0
for i = 1, #ARGV, 2 do
  local existing = redis.call('HGET', KEYS[2], ARGV[i])
  if existing then
    out[#out + 1] = {existing, 0}
  else
    local id = redis.call('XADD', KEYS[1], '*', 'task', ARGV[i], 'payload', ARGV[i + 1])
    redis.call('HSET', KEYS[2], ARGV[i], id)
    redis.call('HSET', KEYS[4], ARGV[i], ARGV[i + 1])
    out[#out + 1] = {id, 1}
    added = added + 1
  end
end
if added > 0 then redis.call('HINCRBY', KEYS[3], 'enqueued', added) end
return out
)lua";

// KEYS: stream, counters. ARGV: group, consumer, count. A non-blocking XREADGROUP that counts
// its deliveries in the same step (the busy path of lease(): one round trip, exact counter).
constexpr const char* kLeaseNowLua = R"lua(
local r = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', ARGV[3],
                     'STREAMS', KEYS[1], '>')
if not r then return {} end
local n = #r[1][2]
if n > 0 then redis.call('HINCRBY', KEYS[2], 'leased', n) end
return r[1][2]
)lua";

// KEYS: stream, results, counters, notices. ARGV: group, entry id, task id, result.
// The result is written (first writer wins) before the entry is acknowledged and deleted; a new
// result rings the bell (a list kept at one element), in the same atomic step. A caller that may
// not acknowledge (the explorer role) parks the still pending entry under '~done' instead, for
// reconcile() to acknowledge: the result is recorded either way.
constexpr const char* kCompleteLua = R"lua(
local recorded = redis.call('HSETNX', KEYS[2], ARGV[3], ARGV[4])
if recorded == 1 then
  redis.call('LPUSH', KEYS[4], ARGV[3])
  redis.call('LTRIM', KEYS[4], 0, 0)
end
local acked = 0
if redis.acl_check_cmd('XACK', KEYS[1], ARGV[1], ARGV[2]) then
  acked = redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
  if acked == 1 then
    redis.call('XDEL', KEYS[1], ARGV[2])
    redis.call('HINCRBY', KEYS[3], 'acked', 1)
  end
else
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1)
  if #p > 0 and p[1][2] ~= '~done' then
    redis.call('XCLAIM', KEYS[1], ARGV[1], '~done', 0, ARGV[2], 'JUSTID')
  end
end
if recorded == 1 then
  redis.call('HINCRBY', KEYS[3], 'completed', 1)
else
  redis.call('HINCRBY', KEYS[3], 'duplicate_results', 1)
end
return {recorded, acked}
)lua";

// KEYS: stream, dead, errors, counters, dead ids, notices. ARGV: group, entry id, task id,
// consumer, error, max deliveries, lease timeout (ms), parking consumer.
constexpr const char* kFailLua = R"lua(
local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1)
if #p == 0 or p[1][2] ~= ARGV[4] then return 'not_held' end
redis.call('HSET', KEYS[3], ARGV[3], ARGV[5])
redis.call('HINCRBY', KEYS[4], 'failed', 1)
local count = p[1][4]
if count >= tonumber(ARGV[6]) then
  dead_letter(ARGV[1], ARGV[2], entry_fields(ARGV[2]) or {'task', ARGV[3]}, count, ARGV[4], ARGV[5])
  return 'dead'
end
-- Parked and looking expired: the next reclaim (min_idle <= lease timeout) re-delivers it.
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[8], 0, ARGV[2], 'IDLE', ARGV[7], 'JUSTID')
return 'retry'
)lua";

// KEYS: stream. ARGV: group, entry id, consumer, lease timeout (ms), parking consumer. 1 if the
// consumer held it: it now belongs to the parking consumer and looks expired, with a delivery
// count one lower (the re-delivery adds it back).
constexpr const char* kReleaseLua = R"lua(
local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1)
if #p == 0 or p[1][2] ~= ARGV[3] then return 0 end
local count = math.max(p[1][4] - 1, 0)
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[5], 0, ARGV[2], 'IDLE', ARGV[4], 'RETRYCOUNT', count,
           'JUSTID')
return 1
)lua";

// KEYS: stream. ARGV: group, entry id, consumer. 1 if the consumer still held it (idle reset).
constexpr const char* kExtendLua = R"lua(
local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1)
if #p == 0 or p[1][2] ~= ARGV[3] then return 0 end
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[3], 0, ARGV[2], 'JUSTID')
return 1
)lua";

// KEYS: stream, results, index, payloads, quarantine, counters, dead ids. ARGV: task id, result,
// reason. Returns {quarantined, requeued, still queued}: the result moves aside only if it is still
// `result`; the task is enqueued again (its first payload) unless its entry is still in the stream.
// A task enqueued again is no longer dead-lettered (it may have been, if a holder whose lease had
// expired completed it after the dead-lettering).
constexpr const char* kQuarantineLua = R"lua(
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return {0, 0, 0} end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('XADD', KEYS[5], 'MAXLEN', '~', 100000, '*', 'task', ARGV[1], 'reason', ARGV[3],
           'result', string.sub(ARGV[2], 1, 4096))
redis.call('HINCRBY', KEYS[6], 'quarantined', 1)
local entry = redis.call('HGET', KEYS[3], ARGV[1])
if entry and #redis.call('XRANGE', KEYS[1], entry, entry) > 0 then return {1, 0, 1} end
local payload = redis.call('HGET', KEYS[4], ARGV[1])
if not payload then return {1, 0, 0} end
local id = redis.call('XADD', KEYS[1], '*', 'task', ARGV[1], 'payload', payload)
redis.call('HSET', KEYS[3], ARGV[1], id)
redis.call('HDEL', KEYS[7], ARGV[1])
redis.call('HINCRBY', KEYS[6], 'requeued', 1)
return {1, 1, 0}
)lua";

// KEYS: stream, dead, errors, counters, dead ids, notices. ARGV: group, consumer, min idle (ms),
// max count, max deliveries. XAUTOCLAIM's semantics, as XPENDING IDLE + XCLAIM so that each entry's
// delivery count and last holder are known before choosing between re-delivery and dead-letter.
constexpr const char* kReclaimLua = R"lua(
local group, consumer, min_idle = ARGV[1], ARGV[2], ARGV[3]
local budget, max_deliveries = tonumber(ARGV[4]), tonumber(ARGV[5])
local out, start = {}, '-'
while budget > 0 do
  local asked = budget
  local page = redis.call('XPENDING', KEYS[1], group, 'IDLE', min_idle, start, '+', asked)
  for _, p in ipairs(page) do
    if budget > 0 then
      budget = budget - redeliver(group, p, consumer, min_idle, max_deliveries, out)
    end
    start = '(' .. p[1]
  end
  if #page < asked then break end
end
if #out > 0 then
  redis.call('HINCRBY', KEYS[4], 'reclaimed', #out)
  redis.call('HINCRBY', KEYS[4], 'leased', #out)
end
return out
)lua";

// KEYS: stream, dead, errors, counters, dead ids, notices. ARGV: group, dead consumer, consumer,
// max count, max deliveries.
constexpr const char* kReclaimFromLua = R"lua(
local group, dead, consumer = ARGV[1], ARGV[2], ARGV[3]
local max_deliveries = tonumber(ARGV[5])
local out = {}
local page = redis.call('XPENDING', KEYS[1], group, '-', '+', ARGV[4], dead)
for _, p in ipairs(page) do
  redeliver(group, p, consumer, 0, max_deliveries, out)
end
if dead ~= consumer and #redis.call('XPENDING', KEYS[1], group, '-', '+', 1, dead) == 0 then
  redis.call('XGROUP', 'DELCONSUMER', KEYS[1], group, dead)
end
if #out > 0 then
  redis.call('HINCRBY', KEYS[4], 'reclaimed', #out)
  redis.call('HINCRBY', KEYS[4], 'leased', #out)
end
return out
)lua";

// KEYS: stream, dead, results, counters. ARGV: group.
// Returns {length, pending, oldest idle ms, dead letters, results, {counter, value, ...}}.
constexpr const char* kStatsLua = R"lua(
local len = redis.call('XLEN', KEYS[1])
local pending = redis.call('XPENDING', KEYS[1], ARGV[1])[1]
local oldest, start = 0, '-'
while pending > 0 do
  local page = redis.call('XPENDING', KEYS[1], ARGV[1], start, '+', 256)
  for _, p in ipairs(page) do
    if p[3] > oldest then oldest = p[3] end
    start = '(' .. p[1]
  end
  if #page < 256 then break end
end
return {len, pending, oldest, redis.call('XLEN', KEYS[2]), redis.call('HLEN', KEYS[3]),
        redis.call('HGETALL', KEYS[4])}
)lua";

// KEYS: purged, dead ids. ARGV: task ids. Returns {purge reasons, dead-letter errors}, each with
// one element per task id (nil when the hash has none): one HMGET per hash, in slices of 1000
// fields beyond that (unpack() is bounded by Lua's C stack).
constexpr const char* kAbandonedLua = R"lua(
local function hmget(key)
  if #ARGV <= 1000 then return redis.call('HMGET', key, unpack(ARGV)) end
  local out = {}
  for first = 1, #ARGV, 1000 do
    local part = redis.call('HMGET', key, unpack(ARGV, first, math.min(first + 999, #ARGV)))
    for i = 1, #part do out[#out + 1] = part[i] end
  end
  return out
end
return {hmget(KEYS[1]), hmget(KEYS[2])}
)lua";

// KEYS: stream, index, purged, counters, notices. ARGV: group, reason, task ids...
// Returns the ids purged. A task is purged when its entry is still in the stream and is either
// undelivered (not pending) or parked under "~released" (given back); a live holder's lease is
// left to complete.
// Purging rings the result bell, as a result does: a trainer waiting for those tasks' results
// learns at once that they will never come (it checks purged()), not at its next re-read.
constexpr const char* kPurgeLua = R"lua(
local out = {}
for i = 3, #ARGV do
  local task = ARGV[i]
  local id = redis.call('HGET', KEYS[2], task)
  if id and redis.call('HEXISTS', KEYS[3], task) == 0 and
     #redis.call('XRANGE', KEYS[1], id, id) > 0 then
    local p = redis.call('XPENDING', KEYS[1], ARGV[1], id, id, 1)
    if #p == 0 or p[1][2] == '~released' then
      if #p > 0 then redis.call('XACK', KEYS[1], ARGV[1], id) end
      redis.call('XDEL', KEYS[1], id)
      redis.call('HSET', KEYS[3], task, ARGV[2])
      out[#out + 1] = task
    end
  end
end
if #out > 0 then
  redis.call('HINCRBY', KEYS[4], 'purged', #out)
  redis.call('LPUSH', KEYS[5], out[1])
  redis.call('LTRIM', KEYS[5], 0, 0)
end
return out
)lua";

// KEYS: stream, dead, errors, counters, dead ids, notices, results, index, payloads, purged.
// ARGV: group, lease timeout (ms), task ids...
// 1. Settles what callers without the right to acknowledge parked: an entry under '~done' whose
//    task has a result, or under '~dead' whose task is dead-lettered, is acknowledged and deleted
//    (and counted then); anything else parked there is given back for re-delivery.
// 2. For each task id: fine if it has a result, was purged or dead-lettered, or its entry is in
//    the stream and leased (pending) or waiting (newer than the group's last delivered id).
//    Otherwise it vanished (acknowledged or deleted by hand, its lease dropped): what is left of
//    its entry goes, and its first payload is enqueued again (counted 'reconciled'), or, with no
//    payload kept, it is reported lost.
// Returns {requeued ids, lost ids, settled count}.
constexpr const char* kReconcileLua = R"lua(
local group = ARGV[1]
local settled = 0
for _, parking in ipairs({'~done', '~dead'}) do
  local page = redis.call('XPENDING', KEYS[1], group, '-', '+', 10000, parking)
  for _, p in ipairs(page) do
    local id = p[1]
    local fields = entry_fields(id)
    local task = fields and field(fields, 'task') or nil
    local finished = false
    if task and parking == '~done' then finished = redis.call('HEXISTS', KEYS[7], task) == 1 end
    if task and parking == '~dead' then finished = redis.call('HEXISTS', KEYS[5], task) == 1 end
    if finished or not task then
      redis.call('XACK', KEYS[1], group, id)
      if task then
        redis.call('XDEL', KEYS[1], id)
        redis.call('HINCRBY', KEYS[4], parking == '~done' and 'acked' or 'dead_lettered', 1)
        settled = settled + 1
      end
    else
      redis.call('XCLAIM', KEYS[1], group, '~released', 0, id, 'IDLE', ARGV[2], 'JUSTID')
    end
  end
end
local function parse_id(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms) or 0, tonumber(seq) or 0
end
local last_ms, last_seq = 0, 0
for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
  if field(g, 'name') == group then last_ms, last_seq = parse_id(field(g, 'last-delivered-id')) end
end
local requeued, lost = {}, {}
for i = 3, #ARGV do
  local task = ARGV[i]
  if redis.call('HEXISTS', KEYS[7], task) == 0 and redis.call('HEXISTS', KEYS[10], task) == 0 and
     redis.call('HEXISTS', KEYS[5], task) == 0 then
    local id = redis.call('HGET', KEYS[8], task)
    local present, pending, waiting = false, false, false
    if id then
      present = #redis.call('XRANGE', KEYS[1], id, id) > 0
      pending = #redis.call('XPENDING', KEYS[1], group, id, id, 1) > 0
      local ms, seq = parse_id(id)
      waiting = ms > last_ms or (ms == last_ms and seq > last_seq)
    end
    if not (present and (pending or waiting)) then
      if pending then redis.call('XACK', KEYS[1], group, id) end
      if present then redis.call('XDEL', KEYS[1], id) end
      local payload = redis.call('HGET', KEYS[9], task)
      if payload then
        local new_id = redis.call('XADD', KEYS[1], '*', 'task', task, 'payload', payload)
        redis.call('HSET', KEYS[8], task, new_id)
        requeued[#requeued + 1] = task
      else
        lost[#lost + 1] = task
      end
    end
  end
end
if #requeued > 0 then redis.call('HINCRBY', KEYS[4], 'reconciled', #requeued) end
return {requeued, lost, settled}
)lua";

// The scripts, each loaded once per connection (see redis::Script).
struct Scripts {
  Script enqueue{kEnqueueLua};
  Script lease_now{kLeaseNowLua};
  Script complete{kCompleteLua};
  Script fail{std::string(kPrelude) + kFailLua};
  Script release{kReleaseLua};
  Script extend{kExtendLua};
  Script reclaim{std::string(kPrelude) + kReclaimLua};
  Script reclaim_from{std::string(kPrelude) + kReclaimFromLua};
  Script stats{kStatsLua};
  Script quarantine{kQuarantineLua};
  Script purge{kPurgeLua};
  Script abandoned{kAbandonedLua};
  Script reconcile{std::string(kPrelude) + kReconcileLua};
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
  } catch (const redis::RedisUnavailable& e) {
    group_ready_ = false;  // maybe a different server when we reconnect: check again
    throw QueueUnavailable("lease queue " + keys_.stream + ": " + e.what(), e.is_timeout());
  } catch (const redis::RedisAuthError& e) {
    throw QueueAccessDenied("lease queue " + keys_.stream + ": " + e.what());
  } catch (const redis::RedisError& e) {
    throw QueueError("lease queue " + keys_.stream + ": " + e.what());
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
    const Reply r = client_.eval(
        scripts().fail,
        {keys_.stream, keys_.dead, keys_.errors, keys_.stats, keys_.dead_ids, keys_.notices},
        {options_.group, lease.entry_id, lease.task_id, lease.consumer, error, max, idle,
         kParkingConsumer});
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
    const Reply r = client_.eval(
        scripts().reclaim,
        {keys_.stream, keys_.dead, keys_.errors, keys_.stats, keys_.dead_ids, keys_.notices},
        {options_.group, consumer, idle, count, max});
    return parse_script_leases(r, consumer);
  });
}

std::vector<Lease> RedisLeaseQueue::reclaim_from(std::string_view dead_consumer,
                                                 std::string_view consumer, int max_count) {
  check_count(max_count, "reclaim_from");
  return call([&] {
    const std::string count = std::to_string(max_count);
    const std::string max = std::to_string(options_.max_deliveries);
    const Reply r = client_.eval(
        scripts().reclaim_from,
        {keys_.stream, keys_.dead, keys_.errors, keys_.stats, keys_.dead_ids, keys_.notices},
        {options_.group, dead_consumer, consumer, count, max});
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
    const Reply r =
        client_.command({"XRANGE", keys_.quarantine, "-", "+", "COUNT", std::to_string(max_count)});
    std::vector<QuarantinedResult> out;
    for (const Reply& entry : r.as_array()) {
      const auto& e = entry.as_array();
      const auto& fields = e.at(1).as_array();
      out.push_back(QuarantinedResult{e.at(0).as_string(), field(fields, "task"),
                                      field(fields, "reason"), field(fields, "result")});
    }
    return out;
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
    const Reply r =
        client_.command({"XRANGE", keys_.dead, "-", "+", "COUNT", std::to_string(max_count)});
    std::vector<DeadLetter> out;
    for (const Reply& entry : r.as_array()) {
      const auto& e = entry.as_array();
      const auto& fields = e.at(1).as_array();
      const std::string deliveries = field(fields, "deliveries");
      out.push_back(DeadLetter{e.at(0).as_string(), field(fields, "task"), field(fields, "payload"),
                               field(fields, "error"), field(fields, "consumer"),
                               deliveries.empty() ? 0 : std::stoll(deliveries)});
    }
    return out;
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
