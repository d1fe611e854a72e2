-- stats(): the queue's sizes and counters in one consistent step.
-- KEYS: stream, dead, results, counters
-- ARGV: group
-- Returns {length, pending, oldest idle ms, dead letters, results, {counter, value, ...}}.
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
