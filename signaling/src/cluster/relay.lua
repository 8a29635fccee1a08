-- Hands a signal to the instance of its addressee, if the addressee is alive and in the
-- sender's room.
-- KEYS[1] the addressee's peer key (value: "<instance> <swarm>")
-- ARGV[1] the sender's swarm  ARGV[2] inbox channel prefix  ARGV[3] the message
-- Returns how many instances received it: 0 when there is no such peer.
local v = redis.call('GET', KEYS[1])
if not v then
  return 0
end
local sp = string.find(v, ' ', 1, true)
if not sp or string.sub(v, sp + 1) ~= ARGV[1] then
  return 0
end
return redis.call('PUBLISH', ARGV[2] .. string.sub(v, 1, sp - 1), ARGV[3])
