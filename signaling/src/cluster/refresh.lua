-- Keeps one instance's peers of a room alive (and puts them back after Redis lost them),
-- then removes and announces the room's expired peers: those of an instance that died.
-- KEYS[1] the room's sorted set  KEYS[2] the room's localities (hash)
-- ARGV[1] ttl in ms  ARGV[2] peer key prefix  ARGV[3] the peer keys' value
-- ARGV[4] departure channel  ARGV[5] departure message prefix
-- ARGV[6..] pairs of peer id and its locality
-- Returns the expired ids.
local now = now_ms()
local ttl = tonumber(ARGV[1])
for i = 6, #ARGV - 1, 2 do
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[i])
  redis.call('SET', ARGV[2] .. ARGV[i], ARGV[3], 'PX', ttl)
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
end
local expired = sweep(KEYS[1], now, ttl, ARGV[4], ARGV[5])
redis.call('PEXPIRE', KEYS[1], 2 * ttl)
redis.call('PEXPIRE', KEYS[2], 2 * ttl)
return expired
