-- fail() and reject(): records the error of a lease its holder gives up on, and dead-letters the
-- task when it had max deliveries; otherwise parks it looking expired, for the next reclaim.
-- KEYS: stream, dead, errors, counters, dead ids, notices
-- ARGV: group, entry id, task id, consumer, error, max deliveries, lease timeout (ms),
--       parking consumer
-- Returns 'not_held' (the consumer does not hold it), 'dead' or 'retry'.
-- Requires: lib/stream.lua lib/dead_letter.lua
local p = pending_entry(ARGV[1], ARGV[2])
if not p or p[2] ~= ARGV[4] then return 'not_held' end
redis.call('HSET', KEYS[3], ARGV[3], ARGV[5])
redis.call('HINCRBY', KEYS[4], 'failed', 1)
local count = p[4]
if count >= tonumber(ARGV[6]) then
  dead_letter(ARGV[1], ARGV[2], entry_fields(ARGV[2]) or {'task', ARGV[3]}, count, ARGV[4], ARGV[5])
  return 'dead'
end
-- Parked and looking expired: the next reclaim (min_idle <= lease timeout) re-delivers it.
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[8], 0, ARGV[2], 'IDLE', ARGV[7], 'JUSTID')
return 'retry'
