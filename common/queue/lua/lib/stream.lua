-- Functions shared by the scripts of one lease queue stream. KEYS[1] is the stream in every
-- script that requires this file.
local function field(fields, name)
  for i = 1, #fields, 2 do
    if fields[i] == name then return fields[i + 1] end
  end
  return ''
end
local function entry_fields(id)
  local e = redis.call('XRANGE', KEYS[1], id, id)
  if e[1] then return e[1][2] end
  return nil
end
-- The pending entry `id` of `group` as {id, owner, idle ms, delivery count}, or nil when it is not
-- pending (never delivered, or acknowledged).
local function pending_entry(group, id)
  return redis.call('XPENDING', KEYS[1], group, id, id, 1)[1]
end
