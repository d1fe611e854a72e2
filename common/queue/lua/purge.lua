-- purge(): drops tasks that no one holds. A task is purged when its entry is still in the stream
-- and is either undelivered (not pending) or parked under '~released' (given back); a live
-- holder's lease is left to complete.
-- Purging rings the result bell, as a result does: a trainer waiting for those tasks' results
-- learns at once that they will never come (it checks purged()), not at its next re-read.
-- KEYS: stream, index, purged, counters, notices
-- ARGV: group, reason, task ids...
-- Returns the ids purged.
-- Requires: lib/stream.lua
local out = {}
for i = 3, #ARGV do
  local task = ARGV[i]
  local id = redis.call('HGET', KEYS[2], task)
  if id and redis.call('HEXISTS', KEYS[3], task) == 0 and entry_fields(id) then
    local p = pending_entry(ARGV[1], id)
    if not p or p[2] == '~released' then
      if p then redis.call('XACK', KEYS[1], ARGV[1], id) end
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
