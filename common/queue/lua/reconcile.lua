-- reconcile(): repairs what a caller without the right to acknowledge, or a hand, left behind.
-- 1. Settles what callers without the right to acknowledge parked: an entry under '~done' whose
--    task has a result, or under '~dead' whose task is dead-lettered, is acknowledged and deleted
--    (and counted then); anything else parked there is given back for re-delivery.
-- 2. For each task id: fine if it has a result, was purged or dead-lettered, or its entry is in
--    the stream and leased (pending) or waiting (newer than the group's last delivered id).
--    Otherwise it vanished (acknowledged or deleted by hand, its lease dropped): what is left of
--    its entry goes, and its first payload is enqueued again (counted 'reconciled'), or, with no
--    payload kept, it is reported lost.
-- KEYS: stream, dead, errors, counters, dead ids, notices, results, index, payloads, purged
-- ARGV: group, lease timeout (ms), task ids...
-- Returns {requeued ids, lost ids, settled count}.
-- Requires: lib/stream.lua
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
      present = entry_fields(id) ~= nil
      pending = pending_entry(group, id) ~= nil
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
