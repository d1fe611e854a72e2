-- abandoned(): why tasks will get no result: one HMGET per hash, in slices of 1000 fields beyond
-- that (unpack() is bounded by Lua's C stack).
-- KEYS: purged, dead ids
-- ARGV: task ids...
-- Returns {purge reasons, dead-letter errors}, each with one element per task id (nil when the
-- hash has none).
local function hmget(key)
  if #ARGV <= 1000 then return redis.call('HMGET', key, unpack(ARGV)) end
  local out = {}
  for first = 1, #ARGV, 1000 do
    local part = redis.call('HMGET', key, unpack(ARGV, first, math.min(first + 999, #ARGV)))
    for i = 1, #part do out[#out + 1] = part[i] end
  end
  return out
end
return {hmget(KEYS[1]), hmget(KEYS[2])}
