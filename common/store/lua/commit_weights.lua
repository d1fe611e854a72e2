-- publish(), last step: writes a version's manifest and moves `latest` forward (never back), in
-- one atomic step.
-- KEYS: manifest, latest
-- ARGV: version, bytes, chunk_bytes, chunks, checksum, algorithm, published_unix_ms[, key_id,
--       signature]
-- Returns 1 if `latest` moved to this version, else 0.
redis.call('HSET', KEYS[1], 'version', ARGV[1], 'bytes', ARGV[2], 'chunk_bytes', ARGV[3],
           'chunks', ARGV[4], 'checksum', ARGV[5], 'algorithm', ARGV[6],
           'published_unix_ms', ARGV[7])
if ARGV[9] then redis.call('HSET', KEYS[1], 'key_id', ARGV[8], 'signature', ARGV[9]) end
local latest = redis.call('GET', KEYS[2])
if not latest or tonumber(latest) < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[2], ARGV[1])
  return 1
end
return 0
