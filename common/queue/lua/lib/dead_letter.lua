-- Settling, dead-lettering and re-delivering entries; follows lib/stream.lua. The scripts that
-- require this file take KEYS[1] stream, KEYS[2] dead letters, KEYS[3] errors, KEYS[4] counters,
-- KEYS[5] dead ids, KEYS[6] notices.
-- A dead-lettered task is remembered (dead ids: task id -> error, for abandoned()) and rings the
-- result bell, as a purge does: a trainer waiting for its result learns at once that none will
-- come.

-- Acknowledges and deletes entry `id`, or, when the caller may not acknowledge (the explorer role
-- of deploy/redis/users.acl has no XACK, XDEL), parks it under `parking` ('~done', '~dead') for
-- reconcile() to settle. True when it was acknowledged now.
local function settle(group, id, parking)
  if redis.acl_check_cmd('XACK', KEYS[1], group, id) then
    local n = redis.call('XACK', KEYS[1], group, id)
    redis.call('XDEL', KEYS[1], id)
    return n == 1
  end
  redis.call('XCLAIM', KEYS[1], group, parking, 0, id, 'JUSTID')
  return false
end
local function dead_letter(group, id, fields, deliveries, consumer, fallback_error)
  local task = field(fields, 'task')
  local err = redis.call('HGET', KEYS[3], task)
  if not err then err = fallback_error end
  redis.call('XADD', KEYS[2], '*', 'task', task, 'payload', field(fields, 'payload'),
             'error', err, 'deliveries', deliveries, 'consumer', consumer, 'entry', id)
  if settle(group, id, '~dead') then redis.call('HINCRBY', KEYS[4], 'dead_lettered', 1) end
  redis.call('HSET', KEYS[5], task, err)
  redis.call('LPUSH', KEYS[6], task)
  redis.call('LTRIM', KEYS[6], 0, 0)
end
-- Re-delivers pending entry p ({id, owner, idle, count}) to `consumer`, or dead-letters it when
-- it already had max_deliveries. Appends a re-delivered lease to `out`; returns 1 if it was.
-- Entries parked under '~done' or '~dead' wait for reconcile(): never re-delivered.
local function redeliver(group, p, consumer, min_idle, max_deliveries, out)
  local id, owner, count = p[1], p[2], p[4]
  if owner == '~done' or owner == '~dead' then return 0 end
  if count >= max_deliveries then
    local fields = entry_fields(id)
    if fields then
      dead_letter(group, id, fields, count, owner,
                  'lease expired after ' .. count .. ' deliveries (last holder ' .. owner .. ')')
    else
      settle(group, id, '~dead')
    end
    return 0
  end
  local c = redis.call('XCLAIM', KEYS[1], group, consumer, min_idle, id)
  if c[1] and c[1][2] then
    out[#out + 1] = {id, field(c[1][2], 'task'), field(c[1][2], 'payload'), count + 1}
    return 1
  end
  return 0
end
-- Re-delivers each entry of `page` (XPENDING's {id, owner, idle, count}, ...) to `consumer` while
-- fewer than `budget` were re-delivered, appending the leases to `out`. Returns the budget left.
local function redeliver_page(group, page, consumer, min_idle, max_deliveries, budget, out)
  for _, p in ipairs(page) do
    if budget > 0 then
      budget = budget - redeliver(group, p, consumer, min_idle, max_deliveries, out)
    end
  end
  return budget
end
-- Counts the leases of a reclaim (re-delivered, so leased again) and returns them.
local function reclaimed(out)
  if #out > 0 then
    redis.call('HINCRBY', KEYS[4], 'reclaimed', #out)
    redis.call('HINCRBY', KEYS[4], 'leased', #out)
  end
  return out
end
