-- reclaim(): re-delivers leases idle for at least min idle to `consumer`, dead-lettering those that
-- had max deliveries. XAUTOCLAIM's semantics, as XPENDING IDLE + XCLAIM so that each entry's
-- delivery count and last holder are known before choosing between re-delivery and dead-letter.
-- KEYS: stream, dead, errors, counters, dead ids, notices
-- ARGV: group, consumer, min idle (ms), max count, max deliveries
-- Returns the leases re-delivered: {{entry id, task id, payload, delivery count}, ...}.
-- Requires: lib/stream.lua lib/dead_letter.lua
local group, consumer, min_idle = ARGV[1], ARGV[2], ARGV[3]
local budget, max_deliveries = tonumber(ARGV[4]), tonumber(ARGV[5])
local out, start = {}, '-'
while budget > 0 do
  local asked = budget
  local page = redis.call('XPENDING', KEYS[1], group, 'IDLE', min_idle, start, '+', asked)
  budget = redeliver_page(group, page, consumer, min_idle, max_deliveries, budget, out)
  if #page > 0 then start = '(' .. page[#page][1] end
  if #page < asked then break end
end
return reclaimed(out)
