-- reclaim_from(): re-delivers the leases of a dead consumer to `consumer` (whatever their idle
-- time), dead-lettering those that had max deliveries, and deletes the dead consumer from the group
-- once it holds nothing.
-- KEYS: stream, dead, errors, counters, dead ids, notices
-- ARGV: group, dead consumer, consumer, max count, max deliveries
-- Returns the leases re-delivered: {{entry id, task id, payload, delivery count}, ...}.
-- Requires: lib/stream.lua lib/dead_letter.lua
local group, dead, consumer = ARGV[1], ARGV[2], ARGV[3]
local budget, max_deliveries = tonumber(ARGV[4]), tonumber(ARGV[5])
local out = {}
local page = redis.call('XPENDING', KEYS[1], group, '-', '+', budget, dead)
redeliver_page(group, page, consumer, 0, max_deliveries, budget, out)
if dead ~= consumer and #redis.call('XPENDING', KEYS[1], group, '-', '+', 1, dead) == 0 then
  redis.call('XGROUP', 'DELCONSUMER', KEYS[1], group, dead)
end
return reclaimed(out)
