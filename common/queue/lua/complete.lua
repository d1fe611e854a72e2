-- complete(): records a task's result (first writer wins) before the entry is acknowledged and
-- deleted; a new result rings the bell (a list kept at one element), in the same atomic step. A
-- caller that may not acknowledge (the explorer role) parks the still pending entry under '~done'
-- instead, for reconcile() to acknowledge: the result is recorded either way.
-- KEYS: stream, results, counters, notices
-- ARGV: group, entry id, task id, result
-- Returns {1 if the result was recorded else 0, 1 if the entry was acknowledged now else 0}.
-- Requires: lib/stream.lua
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
  local p = pending_entry(ARGV[1], ARGV[2])
  if p and p[2] ~= '~done' then
    redis.call('XCLAIM', KEYS[1], ARGV[1], '~done', 0, ARGV[2], 'JUSTID')
  end
end
if recorded == 1 then
  redis.call('HINCRBY', KEYS[3], 'completed', 1)
else
  redis.call('HINCRBY', KEYS[3], 'duplicate_results', 1)
end
return {recorded, acked}
