-- lease(), busy path: a non-blocking XREADGROUP that counts its deliveries in the same step (one
-- round trip, exact counter).
-- KEYS: stream, counters
-- ARGV: group, consumer, count
-- Returns the entries delivered, as XREADGROUP does: {{entry id, {field, value, ...}}, ...}.
local r = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', ARGV[3],
                     'STREAMS', KEYS[1], '>')
if not r then return {} end
local n = #r[1][2]
if n > 0 then redis.call('HINCRBY', KEYS[2], 'leased', n) end
return r[1][2]
