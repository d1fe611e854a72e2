-- extend(): resets the idle time of a lease its consumer still holds.
-- KEYS: stream
-- ARGV: group, entry id, consumer
-- Returns 1 if the consumer still held it, else 0.
-- Requires: lib/stream.lua
local p = pending_entry(ARGV[1], ARGV[2])
if not p or p[2] ~= ARGV[3] then return 0 end
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[3], 0, ARGV[2], 'JUSTID')
return 1
