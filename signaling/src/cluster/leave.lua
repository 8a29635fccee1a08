-- Removes a peer from its room and announces it, unless it had expired already (whoever
-- removed it then announced it).
-- KEYS[1] the room's sorted set  KEYS[2] the peer's key  KEYS[3] the room's localities
-- ARGV[1] peer id  ARGV[2] the peer key's value (deleted only if still ours)
-- ARGV[3] departure channel  ARGV[4] departure message
local n = redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
if redis.call('GET', KEYS[2]) == ARGV[2] then
  redis.call('DEL', KEYS[2])
end
if n == 1 then
  redis.call('PUBLISH', ARGV[3], ARGV[4])
end
return n
