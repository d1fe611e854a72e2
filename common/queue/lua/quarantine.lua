-- quarantine(): moves a task's result aside, only if it is still `result`, and enqueues the task
-- again (its first payload) unless its entry is still in the stream. A task enqueued again is no
-- longer dead-lettered (it may have been, if a holder whose lease had expired completed it after
-- the dead-lettering).
-- KEYS: stream, results, index, payloads, quarantine, counters, dead ids
-- ARGV: task id, result, reason
-- Returns {quarantined, requeued, still queued}, each 1 or 0.
-- Requires: lib/stream.lua
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return {0, 0, 0} end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('XADD', KEYS[5], 'MAXLEN', '~', 100000, '*', 'task', ARGV[1], 'reason', ARGV[3],
           'result', string.sub(ARGV[2], 1, 4096))
redis.call('HINCRBY', KEYS[6], 'quarantined', 1)
local entry = redis.call('HGET', KEYS[3], ARGV[1])
if entry and entry_fields(entry) then return {1, 0, 1} end
local payload = redis.call('HGET', KEYS[4], ARGV[1])
if not payload then return {1, 0, 0} end
local id = redis.call('XADD', KEYS[1], '*', 'task', ARGV[1], 'payload', payload)
redis.call('HSET', KEYS[3], ARGV[1], id)
redis.call('HDEL', KEYS[7], ARGV[1])
redis.call('HINCRBY', KEYS[6], 'requeued', 1)
return {1, 1, 0}
