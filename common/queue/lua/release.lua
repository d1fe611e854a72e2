-- release(): gives a lease back without counting a failure. It then belongs to the parking
-- consumer and looks expired, with a delivery count one lower (the re-delivery adds it back).
-- KEYS: stream
-- ARGV: group, entry id, consumer, lease timeout (ms), parking consumer
-- Returns 1 if the consumer held it, else 0.
-- Requires: lib/stream.lua
local p = pending_entry(ARGV[1], ARGV[2])
if not p or p[2] ~= ARGV[3] then return 0 end
local count = math.max(p[4] - 1, 0)
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[5], 0, ARGV[2], 'IDLE', ARGV[4], 'RETRYCOUNT', count,
           'JUSTID')
return 1
