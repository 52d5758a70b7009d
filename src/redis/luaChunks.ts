/**
 * The Lua pieces the ledger's scripts (`scripts.ts`) are made of: Redis time and helpers, the
 * prologue that drops expired leases, the admission, the raw headroom of a kept reading, and the
 * freshness rule of the kept reading. Keys and arguments: see `scripts.ts`.
 *
 * @module
 */

/** Redis time in ms, helpers, and `ARGV` without the holder arguments. */
export const HEAD = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local instance = ARGV[2]
local holderTtl = tonumber(ARGV[3])
local ARGV = { ARGV[1], unpack(ARGV, 4) }
local function split(s)
  local out = {}
  for f in string.gmatch(s, '([^,]*),?') do out[#out + 1] = f end
  return out
end
local function nextOrder()
  if redis.call('EXISTS', KEYS[12]) == 0 then redis.call('SET', KEYS[12], now + tonumber(ARGV[1])) end
  return redis.call('INCR', KEYS[12])
end
local function zaddLater(key, score, member)
  local cur = redis.call('ZSCORE', key, member)
  if not cur or tonumber(cur) < score then redis.call('ZADD', key, score, member) end
end
local function holders()
  return redis.call('ZRANGEBYSCORE', KEYS[11], '(' .. now, '+inf')
end
`;

/**
 * Shared prologue: drops every expired lease (claims, places, holders) and old `'counted'` records,
 * and renews the caller's holder entry (never shortening it). A claim that lapsed makes the kept
 * reading stale (`freedSeq`): its holder died or hung, and its server, POSTed or not, may exist
 * while no kept reading counts it; the next admission reads `/limits` again instead of admitting on
 * a reading that misses it for up to `limitsMaxAgeMs`.
 */
export const PROLOGUE = `${HEAD}
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
for _, id in ipairs(gone) do redis.call('HDEL', KEYS[1], id) end
if #gone > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  -- a claim that lapsed (its holder died or hung) may have a server no kept reading counts: stale
  redis.call('HSET', KEYS[13], 'freedSeq', nextOrder())
end
local left = redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', now)
for _, id in ipairs(left) do redis.call('HDEL', KEYS[7], id); redis.call('ZREM', KEYS[5], id) end
if #left > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', now) end
local old = redis.call('ZRANGEBYSCORE', KEYS[10], '-inf', now - tonumber(ARGV[1]))
for _, id in ipairs(old) do redis.call('HDEL', KEYS[4], id); redis.call('ZREM', KEYS[3], id) end
if #old > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[10], '-inf', now - tonumber(ARGV[1])) end
redis.call('ZREMRANGEBYSCORE', KEYS[11], '-inf', now)
if instance ~= '' then zaddLater(KEYS[11], now + holderTtl, instance) end
`;

/**
 * The admission (shared by admit, acquire and storeAdmit): subtract every live claim, the claims
 * released as `'counted'` at or after the reading was sent (`stamp`: its order number), and the
 * needs of every place queued ahead; claim when `needs` still fits every constrained resource the
 * call or the places ahead need (`room[r]` nil: unknown or unlimited), and no holder's write-back after a reconnect is settling
 * (the `settle` key: nothing is admitted while it lives). `needStr` are the needs as given (for the record).
 * `measureOn` is the check alone (no claim); with `admittedFrom` it subtracts, of the claims released
 * as `'counted'` at or after `stamp`, only those admitted at or after that order number (the 7th
 * field of a claim record, copied into its `countedneeds` record on release; none: before every
 * reading). `countsTwice`: short on a kept reading only because of the claims released as `'counted'`
 * after it was sent that it may count already (admitted before it was stored; `storedOrd`, nil when
 * not known: every late claim); the caller reads again instead. A claim admitted after the reading
 * was stored has its POST sent after Nova answered it: it stays subtracted. `admitOn` writes the
 * `order` counter's value at the admission into the claim record (`cores,ramMiB,instances,token,holder,serverId,admitted`).
 */
export const ADMISSION = `
local function measureOn(room, placeId, needStr, stamp, admittedFrom)
  local need = { tonumber(needStr[1]), tonumber(needStr[2]), tonumber(needStr[3]) }
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
      if admittedFrom == nil or (tonumber(f[4]) or -1) >= admittedFrom then
        for r = 1, 3 do inflight[r] = inflight[r] + tonumber(f[r]) end
      end
    end
  end
  local ahead = { 0, 0, 0 }
  local mine = nil
  if placeId ~= '' then mine = redis.call('ZSCORE', KEYS[5], placeId) end
  local before
  if mine then before = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', '(' .. mine)
  else before = redis.call('ZRANGE', KEYS[5], 0, -1) end
  for _, id in ipairs(before) do
    if id ~= placeId then
      local v = redis.call('HGET', KEYS[7], id)
      if v then
        local f = split(v)
        for r = 1, 3 do ahead[r] = ahead[r] + tonumber(f[r]) end
      end
    end
  end
  local fits = 1
  -- Settling after a holder's reconnect (see ASSERT): nothing fits until every holder wrote back.
  if redis.call('EXISTS', KEYS[15]) == 1 then fits = 0 end
  for r = 1, 3 do
    -- A resource neither the call nor the places ahead need never blocks (the guard's fitsRawHeadroom).
    if room[r] ~= nil and need[r] + ahead[r] > 0 and room[r] - inflight[r] - ahead[r] - need[r] < 0 then fits = 0 end
  end
  return fits, inflight, ahead
end
-- Short on the reading of order number stamp, stored at order number storedOrd, only because of
-- claims released as 'counted' after it was sent and admitted before it was stored (their servers
-- may be in its usage already): such a kept reading is not answered on. A late claim admitted after
-- it was stored cannot be in it and stays subtracted. storedOrd nil (not known): every late claim.
local function countsTwice(room, placeId, needStr, stamp, storedOrd)
  if measureOn(room, placeId, needStr, stamp) == 1 then return false end
  return measureOn(room, placeId, needStr, stamp, storedOrd or math.huge) == 1
end
local function admitOn(room, placeId, needStr, stamp, ttlMs, holder, claimId)
  local fits, inflight, ahead = measureOn(room, placeId, needStr, stamp)
  local token = 0
  if fits == 1 then
    token = redis.call('INCR', KEYS[8])
    -- the order of its admission (no INCR): its POST comes later, after any reading stored by now
    local admitted = redis.call('GET', KEYS[12]) or ''
    redis.call('HSET', KEYS[1], claimId, needStr[1] .. ',' .. needStr[2] .. ',' .. needStr[3] .. ',' .. token .. ',' .. holder .. ',,' .. admitted)
    redis.call('ZADD', KEYS[2], now + ttlMs, claimId)
    if placeId ~= '' then
      redis.call('ZREM', KEYS[5], placeId); redis.call('ZREM', KEYS[6], placeId); redis.call('HDEL', KEYS[7], placeId)
    end
  end
  return fits, token, inflight, ahead
end
local function joinQueue(placeId, needs, placeTtlMs)
  local seq = redis.call('INCR', KEYS[9])
  redis.call('ZADD', KEYS[5], seq, placeId)
  redis.call('HSET', KEYS[7], placeId, needs)
  redis.call('ZADD', KEYS[6], now + placeTtlMs, placeId)
  return seq
end
`;

/**
 * Raw headroom of a kept reading (its JSON: `{absolute, requestId}`, unlimited written as
 * `"Infinity"`), the rule of `rawHeadroomOf` (`src/ledger/headroom.ts`): `max - used`, at least 0;
 * unlimited (`"Infinity"` or -1) and unknown (max or used missing, or a limit of 0 with usage above
 * it) are `nil` (unconstrained). Whole numbers, rounded down, as `admit` takes them.
 */
export const ROOM_OF = `
local function roomOf(json)
  local ok, r = pcall(cjson.decode, json)
  local a = nil
  if ok and type(r) == 'table' and type(r.absolute) == 'table' then a = r.absolute end
  local function one(maxKey, usedKey)
    if a == nil then return nil end
    local mx, used = a[maxKey], a[usedKey]
    if mx == 'Infinity' or mx == -1 then return nil end
    if type(mx) ~= 'number' or type(used) ~= 'number' then return nil end
    if mx == 0 and used > 0 then return nil end
    local h = mx - used
    if h < 0 then h = 0 end
    return math.floor(h)
  end
  return { one('maxTotalCores', 'totalCoresUsed'), one('maxTotalRAMSize', 'totalRAMUsed'), one('maxTotalInstances', 'totalInstancesUsed') }
end
`;

/**
 * Is the kept reading fresh? Kept, sent no later than Redis's now (a stamp ahead of now means the
 * clock stepped back: not fresh), at most `maxAgeMs` old on Redis's clock, sent after the last
 * confirmed deletion (order numbers), and newer than `staleSeq` (the caller's own clock found the
 * readings up to it too old). Returns `fresh, json, seq, sentAt, shortOk`: `shortOk` when the kept
 * reading may still say "short" (`AcquireRequest.staleShortMs`): sent no later than now, at most
 * `shortMaxAgeMs` old, after the last confirmed deletion (Redis's clock and order only: a reading
 * too old on the caller's clock can only overstate the usage, or miss quota freed outside the ledger).
 */
export const KEPT = `
local function kept(maxAgeMs, staleSeq, shortMaxAgeMs)
  local k = redis.call('HMGET', KEYS[13], 'json', 'seq', 'sentAt', 'freedSeq')
  local json = k[1] or ''
  local seq = tonumber(k[2] or '-1')
  local sentAt = tonumber(k[3] or '-1')
  local freedSeq = tonumber(k[4] or '-1')
  local fresh = k[1] ~= false and k[1] ~= nil and sentAt <= now and now - sentAt <= maxAgeMs and seq > freedSeq and seq > staleSeq
  local shortOk = k[1] ~= false and k[1] ~= nil and sentAt <= now and now - sentAt <= (shortMaxAgeMs or 0) and seq > freedSeq
  return fresh, json, seq, sentAt, shortOk
end
`;


/**
 * The credit of a confirmed deletion to the kept reading (`QuotaLedger.publishFreed` with a
 * `FreedCredit`; see `docs/fleet-ledger.md`, "The credit of a confirmed deletion"). `creditKept(claimId,
 * keptSeqText)` answers 1 and subtracts the claim's needs from the kept reading's usage when every
 * check holds, in this order; else 0 and nothing changes:
 * 1. a claim id without `,` (the credited list is comma-separated) and a whole `keptSeqText`;
 * 2. a reading is kept and its `seq` is `keptSeqText` (the caller saw it stored before its DELETE was sent);
 * 3. the claim was released as `'counted'` (the `counted` zset) with an order number below `seq` (the
 *    reading was sent after Nova counted the server), and its needs are kept (`countedneeds`);
 * 4. the claim was not credited to this reading before (`credited`, valid while `creditSeq` is `seq`);
 * 5. the reading's `absolute` has at least one of `totalCoresUsed`, `totalRAMUsed`,
 *    `totalInstancesUsed` as a number, and each of those present is at least the claim's need (a
 *    smaller usage means the reading did not count the server after all).
 * The kept `json` is rewritten with those usages lowered by the needs (cjson; unlimited limits stay
 * the string `"Infinity"`), and the claim id joins `credited` (`creditSeq` set to `seq`). `seq`,
 * `sentAt` and `freedSeq` are not touched: the reading is exactly as fresh as before. Uses HEAD's `split`.
 */
export const CREDIT = `
local function creditKept(claimId, keptSeqText)
  if claimId == '' or string.find(claimId, ',', 1, true) or not string.match(keptSeqText, '^%d+$') then return 0 end
  local keptSeq = tonumber(keptSeqText)
  local k = redis.call('HMGET', KEYS[13], 'json', 'seq', 'creditSeq', 'credited')
  if not k[1] or tonumber(k[2] or '') ~= keptSeq then return 0 end
  local at = tonumber(redis.call('ZSCORE', KEYS[3], claimId) or '')
  if at == nil or at >= keptSeq then return 0 end
  local v = redis.call('HGET', KEYS[4], claimId)
  if not v then return 0 end
  local credited = ''
  if tonumber(k[3] or '') == keptSeq then credited = k[4] or '' end
  if string.find(',' .. credited .. ',', ',' .. claimId .. ',', 1, true) then return 0 end
  local ok, r = pcall(cjson.decode, k[1])
  if not ok or type(r) ~= 'table' or type(r.absolute) ~= 'table' then return 0 end
  local a = r.absolute
  local f = split(v)
  local used = { 'totalCoresUsed', 'totalRAMUsed', 'totalInstancesUsed' }
  local any = false
  for i = 1, 3 do
    local u = a[used[i]]
    if type(u) == 'number' then
      local need = tonumber(f[i])
      if need == nil or u < need then return 0 end
      any = true
    end
  end
  if not any then return 0 end
  for i = 1, 3 do
    if type(a[used[i]]) == 'number' then a[used[i]] = a[used[i]] - tonumber(f[i]) end
  end
  if credited == '' then credited = claimId else credited = credited .. ',' .. claimId end
  redis.call('HSET', KEYS[13], 'json', cjson.encode(r), 'creditSeq', keptSeqText, 'credited', credited)
  return 1
end
`;
