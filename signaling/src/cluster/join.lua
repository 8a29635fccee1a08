-- Admits a peer to a room unless the room, across every instance, is full.
-- KEYS[1] the room's sorted set (member: peer id, score: expiry in ms, Redis clock)
-- KEYS[2] the new peer's key (value: "<instance> <swarm>")
-- ARGV[1] peer id  ARGV[2] the peer key's value  ARGV[3] ttl in ms  ARGV[4] room limit
-- ARGV[5] sample size  ARGV[6] departure channel  ARGV[7] departure message prefix
-- Returns {status, expired ids (removed and announced here), welcome sample};
-- status is "ok", "full" or "taken" (the id is in use: draw another).
local now = now_ms()
local ttl = tonumber(ARGV[3])
local expired = sweep(KEYS[1], now, ttl, ARGV[6], ARGV[7])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
  return {'full', expired, {}}
end
if not redis.call('SET', KEYS[2], ARGV[2], 'NX', 'PX', ttl) then
  return {'taken', expired, {}}
end
local sample = {}
if tonumber(ARGV[5]) > 0 then
  sample = redis.call('ZRANDMEMBER', KEYS[1], ARGV[5])
end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('PEXPIRE', KEYS[1], 2 * ttl)
return {'ok', expired, sample}
