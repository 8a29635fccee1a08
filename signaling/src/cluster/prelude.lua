-- Put before each script (`Scripts` in mod.rs): what they share.

-- Now in ms by Redis's clock, the one clock every instance's expiries are measured by.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Removes the members of `room` that expired by `now`, announces each on `channel` as
-- `prefix .. id`, and returns their ids.
local function sweep(room, now, channel, prefix)
  local expired = redis.call('ZRANGEBYSCORE', room, '-inf', now)
  if #expired > 0 then
    redis.call('ZREMRANGEBYSCORE', room, '-inf', now)
    for _, id in ipairs(expired) do
      redis.call('PUBLISH', channel, prefix .. id)
    end
  end
  return expired
end

