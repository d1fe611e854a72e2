-- enqueue() and enqueue_many(): adds the tasks whose ids are new; a known id is left as it is.
-- The payload is kept (payloads) for quarantine() and reconcile().
-- KEYS: stream, index, counters, payloads
-- ARGV: task_1, payload_1, task_2, payload_2, ...
-- Returns {{entry id, 1 if new else 0}, ...}, one per task.
local out, added = {}, 0
for i = 1, #ARGV, 2 do
  local existing = redis.call('HGET', KEYS[2], ARGV[i])
  if existing then
    out[#out + 1] = {existing, 0}
  else
    local id = redis.call('XADD', KEYS[1], '*', 'task', ARGV[i], 'payload', ARGV[i + 1])
    redis.call('HSET', KEYS[2], ARGV[i], id)
    redis.call('HSET', KEYS[4], ARGV[i], ARGV[i + 1])
    out[#out + 1] = {id, 1}
    added = added + 1
  end
end
if added > 0 then redis.call('HINCRBY', KEYS[3], 'enqueued', added) end
return out
