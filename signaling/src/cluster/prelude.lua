-- Put before each script (`Scripts` in mod.rs): what they share.

-- Now in ms by Redis's clock, the one clock every instance's expiries are measured by.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Removes the members of `room` that expired by `now` (and their localities, kept in the
-- hash `room .. ':loc'`), announces each on `channel` as `prefix .. id`, and returns
-- their ids. Every instance refreshes its peers every third of
-- `ttl`, so scripts run that often; when none ran for half of `ttl` (Redis stalled, or
-- every instance was cut off from it), peers expired without their instances' fault, and
-- nothing is swept for one `ttl`, while the instances put their peers back.
local function sweep(room, now, ttl, channel, prefix)
  local clock = channel .. ':last-script'
  local hold = channel .. ':sweep-held'
  local last = tonumber(redis.call('GET', clock) or '0')
  redis.call('SET', clock, now, 'PX', 10 * ttl)
  if last > 0 and now - last > ttl / 2 then
    redis.call('SET', hold, '1', 'PX', ttl)
  end
  if redis.call('EXISTS', hold) == 1 then
    return {}
  end
  local expired = redis.call('ZRANGEBYSCORE', room, '-inf', now)
  if #expired > 0 then
    redis.call('ZREMRANGEBYSCORE', room, '-inf', now)
    for _, id in ipairs(expired) do
      redis.call('HDEL', room .. ':loc', id)
      redis.call('PUBLISH', channel, prefix .. id)
    end
  end
  return expired
end

