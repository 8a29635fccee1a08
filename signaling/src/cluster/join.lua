-- Admits a peer to a room unless the room, across every instance, is full.
-- KEYS[1] the room's sorted set (member: peer id, score: expiry in ms, Redis clock)
-- KEYS[2] the new peer's key (value: "<instance> <swarm>")
-- KEYS[3] the room's localities (hash: peer id -> "block|asn")
-- ARGV[1] peer id  ARGV[2] the peer key's value  ARGV[3] ttl in ms  ARGV[4] room limit
-- ARGV[5] candidates for the sample  ARGV[6] departure channel
-- ARGV[7] departure message prefix  ARGV[8] the new peer's locality
-- Returns {status, expired ids (removed and announced here), candidates, their
-- localities, the room's size with the new peer}; status is "ok", "full" or "taken" (the
-- id is in use: draw another). The instance picks the welcome's sample from the
-- candidates, the closest first.
local now = now_ms()
local ttl = tonumber(ARGV[3])
local expired = sweep(KEYS[1], now, ttl, ARGV[6], ARGV[7])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
  return {'full', expired, {}, {}, 0}
end
if not redis.call('SET', KEYS[2], ARGV[2], 'NX', 'PX', ttl) then
  return {'taken', expired, {}, {}, 0}
end
local candidates = {}
local localities = {}
if tonumber(ARGV[5]) > 0 then
  candidates = redis.call('ZRANDMEMBER', KEYS[1], ARGV[5])
  if #candidates > 0 then
    localities = redis.call('HMGET', KEYS[3], unpack(candidates))
  end
end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('PEXPIRE', KEYS[1], 2 * ttl)
redis.call('HSET', KEYS[3], ARGV[1], ARGV[8])
redis.call('PEXPIRE', KEYS[3], 2 * ttl)
return {'ok', expired, candidates, localities, redis.call('ZCARD', KEYS[1])}
