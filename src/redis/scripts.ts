/**
 * The Lua scripts of the Redis ledger. Each runs atomically inside Redis (one script at a time), so
 * the check and the claim of `admit` cannot interleave with another holder's. Every "now" is Redis's
 * own clock (`redis.call('TIME')`), never a host's: leases expire by one clock for the whole fleet.
 *
 * Keys of one ledger scope (see `keys.ts`), in the order every script receives them:
 * 1. `claims`   hash   claim id -> `cores,ramMiB,instances,token,holder,serverId`
 * 2. `claimexp` zset   claim id -> lease expiry (Redis ms)
 * 3. `counted`  zset   claim id -> when it was released as `'counted'` (Redis ms)
 * 4. `countedneeds` hash claim id -> `cores,ramMiB,instances`
 * 5. `queue`    zset   place id -> join order (the `seq` counter)
 * 6. `placeexp` zset   place id -> lease expiry (Redis ms)
 * 7. `places`   hash   place id -> `cores,ramMiB,instances`
 * 8. `token`    string the fencing-token counter (INCR)
 * 9. `seq`      string the join-order counter (INCR)
 *
 * @module
 */

/** Shared prologue: Redis time in ms, and dropping every expired lease. `ARGV[1]` is the counted-retention ms. */
const PROLOGUE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function split(s)
  local out = {}
  for f in string.gmatch(s, '([^,]*),?') do out[#out + 1] = f end
  return out
end
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
for _, id in ipairs(gone) do redis.call('HDEL', KEYS[1], id) end
if #gone > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now) end
local left = redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', now)
for _, id in ipairs(left) do redis.call('HDEL', KEYS[7], id); redis.call('ZREM', KEYS[5], id) end
if #left > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', now) end
local old = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now - tonumber(ARGV[1]))
for _, id in ipairs(old) do redis.call('HDEL', KEYS[4], id) end
if #old > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - tonumber(ARGV[1])) end
`;

/**
 * admit: ARGV 1 retention, 2 place id ('' none), 3-5 needs, 6-8 headroom ('' = unconstrained),
 * 9 stamp, 10 ttlMs, 11 holder, 12 claim id.
 * Returns `{admitted, token, inFlight x3, ahead x3}`.
 */
export const ADMIT = `${PROLOGUE}
local need = { tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]) }
local room = { tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]) }
local stamp = tonumber(ARGV[9])
local inflight = { 0, 0, 0 }
local claims = redis.call('HGETALL', KEYS[1])
for i = 2, #claims, 2 do
  local f = split(claims[i])
  for r = 1, 3 do inflight[r] = inflight[r] + tonumber(f[r]) end
end
local late = redis.call('ZRANGEBYSCORE', KEYS[3], stamp, '+inf')
for _, id in ipairs(late) do
  local v = redis.call('HGET', KEYS[4], id)
  if v then
    local f = split(v)
    for r = 1, 3 do inflight[r] = inflight[r] + tonumber(f[r]) end
  end
end
local ahead = { 0, 0, 0 }
local mine = nil
if ARGV[2] ~= '' then mine = redis.call('ZSCORE', KEYS[5], ARGV[2]) end
local before
if mine then before = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', '(' .. mine)
else before = redis.call('ZRANGE', KEYS[5], 0, -1) end
for _, id in ipairs(before) do
  if id ~= ARGV[2] then
    local v = redis.call('HGET', KEYS[7], id)
    if v then
      local f = split(v)
      for r = 1, 3 do ahead[r] = ahead[r] + tonumber(f[r]) end
    end
  end
end
local fits = 1
for r = 1, 3 do
  if room[r] ~= nil and room[r] - inflight[r] - ahead[r] - need[r] < 0 then fits = 0 end
end
local token = 0
if fits == 1 then
  token = redis.call('INCR', KEYS[8])
  redis.call('HSET', KEYS[1], ARGV[12], ARGV[3] .. ',' .. ARGV[4] .. ',' .. ARGV[5] .. ',' .. token .. ',' .. ARGV[11] .. ',')
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[10]), ARGV[12])
  if ARGV[2] ~= '' then
    redis.call('ZREM', KEYS[5], ARGV[2]); redis.call('ZREM', KEYS[6], ARGV[2]); redis.call('HDEL', KEYS[7], ARGV[2])
  end
end
return { fits, token, inflight[1], inflight[2], inflight[3], ahead[1], ahead[2], ahead[3] }
`;

/** claimAnyway: ARGV 1 retention, 2-4 needs, 5 ttlMs, 6 holder, 7 claim id. Returns the token. */
export const CLAIM_ANYWAY = `${PROLOGUE}
local token = redis.call('INCR', KEYS[8])
redis.call('HSET', KEYS[1], ARGV[7], ARGV[2] .. ',' .. ARGV[3] .. ',' .. ARGV[4] .. ',' .. token .. ',' .. ARGV[6] .. ',')
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[5]), ARGV[7])
return token
`;

/** renew: ARGV 1 retention, 2 claim id, 3 ttlMs. Returns 1 when the lease was live and is extended, else 0. */
export const RENEW = `${PROLOGUE}
if redis.call('ZSCORE', KEYS[2], ARGV[2]) then
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[2])
  return 1
end
return 0
`;

/** bind: ARGV 1 retention, 2 claim id, 3 server id. Returns 1 when the claim is live. */
export const BIND = `${PROLOGUE}
local v = redis.call('HGET', KEYS[1], ARGV[2])
if not v then return 0 end
local f = split(v)
redis.call('HSET', KEYS[1], ARGV[2], f[1] .. ',' .. f[2] .. ',' .. f[3] .. ',' .. f[4] .. ',' .. f[5] .. ',' .. ARGV[3])
return 1
`;

/**
 * release: ARGV 1 retention, 2 claim id, 3 end ('counted' | 'not-created'), 4 needs as
 * `cores,ramMiB,instances`. A `'counted'` end is kept (with its time) for the retention, so an
 * admission on a reading sent before Nova counted the server still subtracts it. Idempotent.
 */
export const RELEASE = `${PROLOGUE}
redis.call('HDEL', KEYS[1], ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[2])
if ARGV[3] == 'counted' and not redis.call('ZSCORE', KEYS[3], ARGV[2]) then
  redis.call('ZADD', KEYS[3], now, ARGV[2])
  redis.call('HSET', KEYS[4], ARGV[2], ARGV[4])
end
return 1
`;

/** join: ARGV 1 retention, 2 place id, 3 needs, 4 placeTtlMs. Returns the join order. */
export const JOIN = `${PROLOGUE}
local seq = redis.call('INCR', KEYS[9])
redis.call('ZADD', KEYS[5], seq, ARGV[2])
redis.call('HSET', KEYS[7], ARGV[2], ARGV[3])
redis.call('ZADD', KEYS[6], now + tonumber(ARGV[4]), ARGV[2])
return seq
`;

/** leave: ARGV 1 retention, 2 place id. Idempotent. */
export const LEAVE = `${PROLOGUE}
redis.call('ZREM', KEYS[5], ARGV[2]); redis.call('ZREM', KEYS[6], ARGV[2]); redis.call('HDEL', KEYS[7], ARGV[2])
return 1
`;

/**
 * assert: what this holder holds, written back as it was (the heartbeat of places, and after a
 * reconnect the claims too: a Redis restarted empty learns them again, without an admission check).
 * ARGV 1 retention, 2 placeTtlMs, 3 highest token seen, 4 highest seq seen, 5 number of places P,
 * then P x (id, seq, needs), then claims x (id, record, remaining ttl ms), then the re-add flag.
 * Without the flag (the heartbeat) only places still in Redis are extended: a place that an
 * admission took, or that expired, is not brought back. Counters never go back.
 */
export const ASSERT = `${PROLOGUE}
if tonumber(redis.call('GET', KEYS[8]) or '0') < tonumber(ARGV[3]) then redis.call('SET', KEYS[8], ARGV[3]) end
if tonumber(redis.call('GET', KEYS[9]) or '0') < tonumber(ARGV[4]) then redis.call('SET', KEYS[9], ARGV[4]) end
local p = tonumber(ARGV[5])
local i = 6
local readd = ARGV[#ARGV] == '1'
for _ = 1, p do
  if readd or redis.call('ZSCORE', KEYS[6], ARGV[i]) then
    redis.call('ZADD', KEYS[5], ARGV[i + 1], ARGV[i])
    redis.call('HSET', KEYS[7], ARGV[i], ARGV[i + 2])
    redis.call('ZADD', KEYS[6], now + tonumber(ARGV[2]), ARGV[i])
  end
  i = i + 3
end
local restored = 0
while i + 2 <= #ARGV - 1 do
  if not redis.call('ZSCORE', KEYS[2], ARGV[i]) and tonumber(ARGV[i + 2]) > 0 then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
    redis.call('ZADD', KEYS[2], now + tonumber(ARGV[i + 2]), ARGV[i])
    restored = restored + 1
  end
  i = i + 3
end
return restored
`;

/**
 * limitsBegin: KEYS 1 the kept reading (hash: json, stamp, freedAt), 2 the refresh lock. ARGV 1
 * maxAgeMs, 2 lockMs, 3 lock token. A kept reading is fresh when younger than maxAgeMs and sent
 * no earlier than the last confirmed deletion (`freedAt`, see FREED): a reading from before a
 * deletion shows quota as used that Nova has freed since. Returns `{state, json, stamp, now}`:
 * state `fresh` (use the kept reading),
 * `lock` (this caller refreshes), `wait` (another holder refreshes).
 */
export const LIMITS_BEGIN = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local kept = redis.call('HMGET', KEYS[1], 'json', 'stamp', 'freedAt')
local json = kept[1] or ''
local stamp = tonumber(kept[2] or '-1')
local freedAt = tonumber(kept[3] or '-1')
if kept[1] and now - stamp <= tonumber(ARGV[1]) and stamp >= freedAt then return { 'fresh', json, stamp, now } end
if redis.call('SET', KEYS[2], ARGV[3], 'NX', 'PX', ARGV[2]) then return { 'lock', json, stamp, now } end
return { 'wait', json, stamp, now }
`;

/**
 * limitsStore: KEYS 1 the kept reading, 2 the lock, ARGV 1 json, 2 stamp, 3 lock token, 4 channel.
 * Keeps the reading unless a newer one is kept, frees the lock if it is still this caller's, and
 * publishes the stamp.
 */
export const LIMITS_STORE = `
local cur = tonumber(redis.call('HGET', KEYS[1], 'stamp') or '-1')
if cur < tonumber(ARGV[2]) then redis.call('HSET', KEYS[1], 'json', ARGV[1], 'stamp', ARGV[2]) end
if redis.call('GET', KEYS[2]) == ARGV[3] then redis.call('DEL', KEYS[2]) end
redis.call('PUBLISH', ARGV[4], ARGV[2])
return 1
`;

/** limitsUnlock: KEYS 1 the lock, ARGV 1 lock token: frees the lock after a failed read. */
export const LIMITS_UNLOCK = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
`;

/**
 * inFlight (read-only): ARGV 1 retention, 2 stamp. What `admit` would subtract for claims for a
 * reading of `stamp` (live claims, and claims released as `'counted'` at or after it), without
 * dropping expired leases or claiming. Returns `{cores, ramMiB, instances}`.
 */
export const IN_FLIGHT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function add(acc, s)
  local i = 1
  for f in string.gmatch(s, '([^,]*),?') do
    if i <= 3 then acc[i] = acc[i] + (tonumber(f) or 0) end
    i = i + 1
  end
end
local inflight = { 0, 0, 0 }
local live = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. now, '+inf')
for _, id in ipairs(live) do
  local v = redis.call('HGET', KEYS[1], id)
  if v then add(inflight, v) end
end
local since = math.max(tonumber(ARGV[2]), now - tonumber(ARGV[1]))
local late = redis.call('ZRANGEBYSCORE', KEYS[3], since, '+inf')
for _, id in ipairs(late) do
  local v = redis.call('HGET', KEYS[4], id)
  if v then add(inflight, v) end
end
return inflight
`;

/**
 * liveClaims (read-only): the ids of the claims whose lease has not expired by Redis's clock
 * (released claims are gone from `claimexp`). Returns a list of claim ids.
 */
export const LIVE_CLAIMS = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. now, '+inf')
`;

/**
 * freed: KEYS 1 the kept reading, ARGV 1 channel, 2 message. Notes when a deletion was confirmed
 * (`freedAt`, Redis ms: older kept readings are no longer handed out as fresh) and publishes the
 * wake-up, in one step, so a woken waiter never gets a reading from before the deletion.
 */
export const FREED = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], 'freedAt', now)
redis.call('PUBLISH', ARGV[1], ARGV[2])
return now
`;
