/**
 * The Lua scripts of the Redis ledger. Each runs atomically inside Redis (one script at a time), so
 * the check and the claim of `admit` cannot interleave with another holder's. Every "now" is Redis's
 * own clock (`redis.call('TIME')`), never a host's: leases expire by one clock for the whole fleet.
 * What must stay ordered when that clock steps (a Redis restarted on another host, a failover to a
 * replica whose clock is behind) is ordered by the `order` counter instead (INCR): when a reading
 * was sent, when a claim was released as `'counted'`, when a deletion was confirmed. See
 * `docs/fleet-ledger.md`, "Clock steps", for what a step does to every script.
 *
 * Keys of one ledger scope (see `options.ts` `ledgerKeys`), in the order every script receives them:
 * 1. `claims`   hash   claim id -> `cores,ramMiB,instances,token,holder,serverId,admitted` (`admitted`:
 *    the `order` number at its admission by an admission script; empty for claimAnyway, a write-back
 *    and a listed server: taken as admitted before every reading)
 * 2. `claimexp` zset   claim id -> lease expiry (Redis ms)
 * 3. `counted`  zset   claim id -> the `order` number of its release as `'counted'`
 * 4. `countedneeds` hash claim id -> `cores,ramMiB,instances,admitted` (`admitted` as in `claims`)
 * 5. `queue`    zset   place id -> join order (the `seq` counter)
 * 6. `placeexp` zset   place id -> lease expiry (Redis ms)
 * 7. `places`   hash   place id -> `cores,ramMiB,instances`
 * 8. `token`    string the fencing-token counter (INCR)
 * 9. `seq`      string the join-order counter (INCR)
 * 10. `countedat` zset claim id -> when it was released as `'counted'` (Redis ms; only to drop old records)
 * 11. `holders` zset   holder instance id -> expiry (Redis ms): the live holders of the scope
 * 12. `order`   string the order counter (INCR; started at Redis's now + the counted retention)
 * 13. `limits`  hash   the kept reading: `json`, `seq` (its order number when sent), `sentAt`
 *     (Redis ms when sent), `storedOrd` (the order number taken when it was stored, its answer
 *     received; valid while `storedFor` is its `seq`), `freedSeq` (the order number of the last confirmed deletion), `vetted`
 *     (set once a holder listed the servers Nova does not count yet into the store: see VETTED),
 *     `credited` (the claim ids whose confirmed deletion was subtracted from the kept reading,
 *     comma-separated) valid while `creditSeq` is the kept `seq` (see FREED; dropped whenever
 *     another reading is kept)
 * 14. `limits:lock` string the refresh lock
 * 15. `settle`  string set by every write-back after a reconnect, with a lease of `placeTtlMs` (the
 *     holder lease) when the store lost its state (`order` missing, or the writing holder's own
 *     `holders` entry gone), else of `placeTtlMs / 3` (one
 *     heartbeat), never shortening a longer one: while it lives no admission is made (see
 *     `luaChunks.ts` ADMISSION)
 *
 * Every script gets `ARGV[1]` the counted retention (ms), `ARGV[2]` the caller's holder instance id
 * (`''`: none), `ARGV[3]` the holder lease (ms); the scripts below number their own arguments from
 * 2 (the head drops 2 and 3 from `ARGV`).
 *
 * @module
 */

import { ADMISSION, CREDIT, HEAD, KEPT, PROLOGUE, ROOM_OF } from './luaChunks.js';

/**
 * admit: ARGV 2 place id ('' none), 3-5 needs, 6-8 headroom ('' = unconstrained), 9 stamp (the
 * reading's order number), 10 ttlMs, 11 holder, 12 claim id.
 * Returns `{admitted, token, inFlight x3, ahead x3, holders}`.
 */
export const ADMIT = `${PROLOGUE}${ADMISSION}
local room = { tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]) }
local fits, token, inflight, ahead = admitOn(room, ARGV[2], { ARGV[3], ARGV[4], ARGV[5] }, tonumber(ARGV[9]), tonumber(ARGV[10]), ARGV[11], ARGV[12])
return { fits, token, inflight[1], inflight[2], inflight[3], ahead[1], ahead[2], ahead[3], holders() }
`;

/**
 * acquire: one admission together with its reading. ARGV 2 place id ('' none), 3-5 needs, 6
 * ttlMs, 7 holder, 8 claim id, 9 join if short ('1'), 10 id of the place to take, 11 placeTtlMs,
 * 12 maxAgeMs, 13 lockMs, 14 lock token, 15 staleSeq, 16 the caller can list the servers Nova does
 * not count yet ('1'), 17 restartGraceMs, 18 staleShortMs (0: off).
 * A kept reading that is not fresh but `shortOk` (see KEPT) and leaves the needs short answers
 * `short` (not admitted, joining as below) with no lock and no read: only an admission needs a
 * fresh reading. A kept reading, fresh or `shortOk`, that is short only because of claims released
 * as `'counted'` after it was sent and admitted before it was stored (`countsTwice`) is treated as
 * stale: lock and read.
 * A store not `vetted` (new, or emptied by a restart: the two look the same) and a caller that can
 * list: while Redis has been up less than restartGraceMs (its `uptime_in_seconds` less one, for
 * its rounding), `young` (no admission, no lock); else takes the refresh lock (`vet`: the caller
 * lists, then VETTED) or says another holder does (`wait`); no admission before. When the kept reading is fresh: admits on it (and, short with no
 * place and asked to, joins). Otherwise takes the refresh lock (`lock`: the caller reads, then
 * storeAdmit) or says another holder refreshes (`wait`). Returns `{state, admitted, token, inFlight
 * x3, ahead x3, json, seq, sentAt, now, holders, joinSeq, keptSeq}`; for `lock`, `seq` and `sentAt`
 * are the caller's read's; `keptSeq` is the order number of the reading kept in Redis (-1: none),
 * in every state (`QuotaLedger.keptSeen`).
 */
export const ACQUIRE = `${PROLOGUE}${ADMISSION}${ROOM_OF}${KEPT}
local fresh, json, seq, sentAt, shortOk = kept(tonumber(ARGV[12]), tonumber(ARGV[15]), tonumber(ARGV[18] or '0'))
local keptSeq = -1
if json ~= '' then keptSeq = seq end
if ARGV[16] == '1' and not redis.call('HGET', KEYS[13], 'vetted') then
  local state = 'wait'
  local grace = tonumber(ARGV[17] or '0')
  local up = 0
  if grace > 0 then up = tonumber(string.match(redis.call('INFO', 'server'), 'uptime_in_seconds:(%d+)') or '0') end
  if grace > 0 and (up - 1) * 1000 < grace then state = 'young'
  elseif redis.call('SET', KEYS[14], ARGV[14], 'NX', 'PX', ARGV[13]) then state = 'vet' end
  return { state, 0, 0, 0, 0, 0, 0, 0, 0, json, seq, sentAt, now, holders(), 0, keptSeq }
end
-- Short only by claims released after it was sent that it may count: read again rather than answer on it.
local stored = redis.call('HMGET', KEYS[13], 'storedOrd', 'storedFor')
local storedOrd = nil
if tonumber(stored[2] or '') == seq then storedOrd = tonumber(stored[1] or '') end
if json ~= '' and (fresh or shortOk) and countsTwice(roomOf(json), ARGV[2], { ARGV[3], ARGV[4], ARGV[5] }, seq, storedOrd) then
  fresh, shortOk = false, false
end
if not fresh and shortOk then
  local fits, inflight, ahead = measureOn(roomOf(json), ARGV[2], { ARGV[3], ARGV[4], ARGV[5] }, seq)
  if fits == 0 then
    local joined = 0
    if ARGV[9] == '1' and ARGV[2] == '' then
      joined = joinQueue(ARGV[10], ARGV[3] .. ',' .. ARGV[4] .. ',' .. ARGV[5], tonumber(ARGV[11]))
    end
    return { 'short', 0, 0, inflight[1], inflight[2], inflight[3], ahead[1], ahead[2], ahead[3], json, seq, sentAt, now, holders(), joined, keptSeq }
  end
end
if not fresh then
  if redis.call('SET', KEYS[14], ARGV[14], 'NX', 'PX', ARGV[13]) then
    return { 'lock', 0, 0, 0, 0, 0, 0, 0, 0, json, nextOrder(), now, now, holders(), 0, keptSeq }
  end
  return { 'wait', 0, 0, 0, 0, 0, 0, 0, 0, json, seq, sentAt, now, holders(), 0, keptSeq }
end
local fits, token, inflight, ahead = admitOn(roomOf(json), ARGV[2], { ARGV[3], ARGV[4], ARGV[5] }, seq, tonumber(ARGV[6]), ARGV[7], ARGV[8])
local joined = 0
if fits == 0 and ARGV[9] == '1' and ARGV[2] == '' then
  joined = joinQueue(ARGV[10], ARGV[3] .. ',' .. ARGV[4] .. ',' .. ARGV[5], tonumber(ARGV[11]))
end
return { 'fresh', fits, token, inflight[1], inflight[2], inflight[3], ahead[1], ahead[2], ahead[3], json, seq, sentAt, now, holders(), joined, keptSeq }
`;

/**
 * storeAdmit: the second half of acquire, after the caller read `/limits` under the lock. ARGV 2-11
 * as acquire, 12 the reading's JSON, 13 its order number (when sent), 14 its Redis time when sent,
 * 15 lock token, 16 channel. Keeps the reading (unless a newer one is kept: then it is not stored,
 * and not published) and publishes its order number; when the caller still holds the lock, frees it
 * and admits on the reading (joining as acquire does): state `stored`. When the lock is no longer
 * the caller's (it expired while the caller read), no admission on the reading: state `lost`.
 * Returns the shape of acquire; `keptSeq` is the order number of the reading kept in Redis once the
 * script ran (the caller's when it stored it, else the newer one kept; -1: none).
 */
export const STORE_ADMIT = `${PROLOGUE}${ADMISSION}${ROOM_OF}
local json, seq, sentAt = ARGV[12], tonumber(ARGV[13]), tonumber(ARGV[14])
local cur = tonumber(redis.call('HGET', KEYS[13], 'seq') or '-1')
local keptSeq = cur
if cur < seq then
  redis.call('HSET', KEYS[13], 'json', json, 'seq', seq, 'sentAt', sentAt, 'storedOrd', nextOrder(), 'storedFor', seq)
  redis.call('HDEL', KEYS[13], 'creditSeq', 'credited')
  redis.call('PUBLISH', ARGV[16], seq)
  keptSeq = seq
end
if redis.call('GET', KEYS[14]) ~= ARGV[15] then
  return { 'lost', 0, 0, 0, 0, 0, 0, 0, 0, json, seq, sentAt, now, holders(), 0, keptSeq }
end
redis.call('DEL', KEYS[14])
local fits, token, inflight, ahead = admitOn(roomOf(json), ARGV[2], { ARGV[3], ARGV[4], ARGV[5] }, seq, tonumber(ARGV[6]), ARGV[7], ARGV[8])
local joined = 0
if fits == 0 and ARGV[9] == '1' and ARGV[2] == '' then
  joined = joinQueue(ARGV[10], ARGV[3] .. ',' .. ARGV[4] .. ',' .. ARGV[5], tonumber(ARGV[11]))
end
return { 'stored', fits, token, inflight[1], inflight[2], inflight[3], ahead[1], ahead[2], ahead[3], json, seq, sentAt, now, holders(), joined, keptSeq }
`;

/** claimAnyway: ARGV 2-4 needs, 5 ttlMs, 6 holder, 7 claim id. Returns the token. */
export const CLAIM_ANYWAY = `${PROLOGUE}
local token = redis.call('INCR', KEYS[8])
redis.call('HSET', KEYS[1], ARGV[7], ARGV[2] .. ',' .. ARGV[3] .. ',' .. ARGV[4] .. ',' .. token .. ',' .. ARGV[6] .. ',')
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[5]), ARGV[7])
return token
`;

/**
 * renew: ARGV 2 claim id, 3 ttlMs. Returns 1 when the lease was live and is extended (never
 * shortened: after Redis's clock stepped back, the later expiry stands), else 0.
 */
export const RENEW = `${PROLOGUE}
if redis.call('ZSCORE', KEYS[2], ARGV[2]) then
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[2])
  return 1
end
return 0
`;

/** bind: ARGV 2 claim id, 3 server id (the record's admission order kept). Returns 1 when the claim is live. */
export const BIND = `${PROLOGUE}
local v = redis.call('HGET', KEYS[1], ARGV[2])
if not v then return 0 end
local f = split(v)
local admitted = ''
if tonumber(f[7] or '') then admitted = ',' .. f[7] end
redis.call('HSET', KEYS[1], ARGV[2], f[1] .. ',' .. f[2] .. ',' .. f[3] .. ',' .. f[4] .. ',' .. f[5] .. ',' .. ARGV[3] .. admitted)
return 1
`;

/**
 * release: ARGV 2 claim id, 3 end ('counted' | 'not-created'), 4 needs as `cores,ramMiB,instances`.
 * A `'counted'` end is kept (with its order number, and its time for dropping it after the
 * retention), so an admission on a reading sent before Nova counted the server still subtracts it;
 * with it the claim's admission order (its record's 7th field, when the claim is still there).
 * Idempotent.
 */
export const RELEASE = `${PROLOGUE}
local rec = redis.call('HGET', KEYS[1], ARGV[2])
redis.call('HDEL', KEYS[1], ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[2])
if ARGV[3] == 'counted' and not redis.call('ZSCORE', KEYS[3], ARGV[2]) then
  local admitted = ''
  if rec and tonumber(split(rec)[7] or '') then admitted = ',' .. split(rec)[7] end
  redis.call('ZADD', KEYS[3], nextOrder(), ARGV[2])
  redis.call('ZADD', KEYS[10], now, ARGV[2])
  redis.call('HSET', KEYS[4], ARGV[2], ARGV[4] .. admitted)
end
return 1
`;

/** join: ARGV 2 place id, 3 needs, 4 placeTtlMs. Returns the join order. */
export const JOIN = `${PROLOGUE}${ADMISSION}
return joinQueue(ARGV[2], ARGV[3], tonumber(ARGV[4]))
`;

/** leave: ARGV 2 place id. Idempotent. */
export const LEAVE = `${PROLOGUE}
redis.call('ZREM', KEYS[5], ARGV[2]); redis.call('ZREM', KEYS[6], ARGV[2]); redis.call('HDEL', KEYS[7], ARGV[2])
return 1
`;

/** goodbye: the holder leaves the scope (its `close()`): drops its holder entry. */
export const GOODBYE = `${HEAD}
redis.call('ZREM', KEYS[11], instance)
return 1
`;

/**
 * assert: what this holder holds, written back as it was (the heartbeat of places and of the
 * holder entry, and after a reconnect the claims too). ARGV 2 placeTtlMs, 3 highest token seen, 4
 * highest seq seen, 5 highest order number seen, 6 number of places P, then P x (id, seq, needs),
 * then claims x (id, record, remaining ttl ms, posting '1' | '0'), then the re-add flag. Without
 * the flag (the heartbeat) only places still in Redis are extended: a place that an admission
 * took, or that expired, is not brought back. Counters never go back. A write-back sets `settle`
 * (no admission): for `placeTtlMs` when the store lost its state, else for `placeTtlMs / 3`; so
 * does a heartbeat that finds the state lost.
 * A claim the store no longer has (a Redis restarted empty, or its lease ran out while the holder
 * was away) is restored, without an admission check, only when it is posting (renewed right
 * before its POST, taken with claimAnyway, or bound: its server may exist or be on its way): the
 * store can no longer vouch for a claim only admitted, and others may have admitted on a count
 * without it. Such a claim stays gone: its holder's renewal right before the POST answers 0 and
 * the guard goes back through admission. Returns `{restored, holders, dropped}` (the claims written back,
 * the live holders' entries, the claims dropped).
 */
export const ASSERT = `
-- This holder's own entry in \`holders\`, before the prologue renews it (see \`lost\` below).
local ownEntry = redis.call('ZSCORE', KEYS[11], ARGV[2])
${PROLOGUE}
if tonumber(redis.call('GET', KEYS[8]) or '0') < tonumber(ARGV[3]) then redis.call('SET', KEYS[8], ARGV[3]) end
-- The join order too: a place taken after an empty restart must come after every place written back.
if tonumber(redis.call('GET', KEYS[9]) or '0') < tonumber(ARGV[4]) then redis.call('SET', KEYS[9], ARGV[4]) end
local readd = ARGV[#ARGV] == '1'
-- The store lost its state (a Redis restarted empty): \`order\` exists from the scope's first order
-- number on, so a holder that writes back (or has seen an order number) and finds it missing knows.
-- A heartbeat of a holder that has seen none leaves it missing, so the write-back can still tell.
-- A process that reached the store for the first time after the restart (before any holder that
-- knew it wrote back) may have created \`order\` already: a write-back also knows the state was lost
-- when its own holder entry is gone (renewed every placeTtlMs / 3, on a lease of placeTtlMs: gone
-- means emptied, or this holder was away a whole lease; either way the others may have admitted on
-- a count without its claims).
local emptied = redis.call('EXISTS', KEYS[12]) == 0
local lost = (emptied and (readd or tonumber(ARGV[5]) > 0)) or (readd and not (ownEntry and tonumber(ownEntry) > now))
if not emptied or lost then
  nextOrder()
  if tonumber(redis.call('GET', KEYS[12])) < tonumber(ARGV[5]) then redis.call('SET', KEYS[12], ARGV[5]) end
end
-- No admission while holders may still have claims the store does not show (see \`luaChunks.ts\`
-- ADMISSION): never shortening a longer settle already set.
local function settle(ms)
  if redis.call('PTTL', KEYS[15]) < ms then redis.call('SET', KEYS[15], '1', 'PX', ms) end
end
-- After an empty restart every holder's claims are gone until it writes them back, and each holder
-- reconnects on its own schedule (ioredis's backoff, up to 2 s; then the write-back, bounded by
-- commandTimeoutMs; on a loaded host, later). Settle for the whole holder lease (placeTtlMs): the
-- longest a holder can go without reaching the store and still count as live (a live holder is
-- heard from every placeTtlMs / 3; one silent for placeTtlMs is dropped from \`holders\` and its
-- places expire). One heartbeat (placeTtlMs / 3) was not enough: a holder back later than that
-- found the others admitting on a reading that did not count its uncounted servers.
if lost then settle(tonumber(ARGV[2])) end
-- A holder came back to a store that kept its state (its network was cut, or Redis restarted with
-- its data): the others' claims are there; what may be missing is what a holder admitted on its own
-- meanwhile, re-claimed when it finds Redis again. One heartbeat covers that.
if readd then settle(math.max(1, math.floor(tonumber(ARGV[2]) / 3))) end
local p = tonumber(ARGV[6])
local i = 7
for _ = 1, p do
  if readd or redis.call('ZSCORE', KEYS[6], ARGV[i]) then
    redis.call('ZADD', KEYS[5], ARGV[i + 1], ARGV[i])
    redis.call('HSET', KEYS[7], ARGV[i], ARGV[i + 2])
    redis.call('ZADD', KEYS[6], now + tonumber(ARGV[2]), ARGV[i])
  end
  i = i + 3
end
local restored, dropped = 0, 0
while i + 3 <= #ARGV - 1 do
  local cur = redis.call('ZSCORE', KEYS[2], ARGV[i])
  if tonumber(ARGV[i + 2]) > 0 then
    if not cur and ARGV[i + 3] ~= '1' then
      -- Only admitted (its POST not sent): the store cannot vouch for it any more. Not restored;
      -- its renewal right before the POST answers 0 and its create goes back through admission.
      dropped = dropped + 1
    elseif not cur then
      redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
      redis.call('ZADD', KEYS[2], now + tonumber(ARGV[i + 2]), ARGV[i])
      restored = restored + 1
    elseif split(redis.call('HGET', KEYS[1], ARGV[i]) or '')[4] == '0' then
      -- A newcomer listed this claim's server (VETTED, token 0) before this write-back: the claim
      -- is the holder's again, with the later of the two expiries.
      redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
      zaddLater(KEYS[2], now + tonumber(ARGV[i + 2]), ARGV[i])
    end
  end
  i = i + 4
end
return { restored, holders(), dropped }
`;

/**
 * vetted: what a holder learned by listing the project before the first admission on a store that
 * was not `vetted` (new, or emptied: see ACQUIRE). ARGV 2 lock token, 3 channel, 4 lease of the
 * listed servers (ms: placeTtlMs), then pairs (claim id, record): one per server Nova does not count
 * yet, under its metadata claim id (the claim of the holder that created it, when it has one) or
 * `server:<id>`, its record `cores,ramMiB,instances,0,<holder>,<server id>` (token 0: not a fenced
 * claim). Each is held as a claim for the lease, unless a live claim of that id is there (a holder
 * wrote it back first); a later write-back of the holder takes it over (ASSERT). Marks the store
 * `vetted`, makes every kept reading stale (`freedSeq`: a reading sent before the listing may
 * not count what the listing showed counted), frees the lock if it is still the caller's and wakes
 * the holders waiting for a reading. Returns the number of servers held.
 */
export const VETTED = `${PROLOGUE}
local added = 0
local i = 5
while i + 1 <= #ARGV do
  if not redis.call('ZSCORE', KEYS[2], ARGV[i]) then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
    redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), ARGV[i])
    added = added + 1
  end
  i = i + 2
end
redis.call('HSET', KEYS[13], 'vetted', '1', 'freedSeq', nextOrder())
if redis.call('GET', KEYS[14]) == ARGV[2] then redis.call('DEL', KEYS[14]) end
redis.call('PUBLISH', ARGV[3], 'vetted')
return added
`;

/**
 * limitsBegin: ARGV 2 maxAgeMs, 3 lockMs, 4 lock token, 5 staleSeq. The kept reading is handed out
 * when fresh (see KEPT: by Redis's clock, by order after the last confirmed deletion, and by the
 * caller's own clock through `staleSeq`). Returns `{state, json, seq, sentAt, now, sendSeq}`:
 * state `fresh` (use the kept reading), `lock` (this caller refreshes), `wait` (another holder
 * refreshes); `sendSeq` is the order number of a read the caller sends now (0 when fresh).
 */
export const LIMITS_BEGIN = `${HEAD}${KEPT}
local fresh, json, seq, sentAt = kept(tonumber(ARGV[2]), tonumber(ARGV[5]))
if fresh then return { 'fresh', json, seq, sentAt, now, 0 } end
if redis.call('SET', KEYS[14], ARGV[4], 'NX', 'PX', ARGV[3]) then return { 'lock', json, seq, sentAt, now, nextOrder() } end
return { 'wait', json, seq, sentAt, now, nextOrder() }
`;

/**
 * limitsStore: ARGV 2 json, 3 order number when sent, 4 Redis time when sent, 5 lock token, 6
 * channel. Keeps the reading unless a newer one is kept, frees the lock if it is still this
 * caller's, and publishes the order number of the reading kept once it ran (the caller's when it
 * stored it, else the newer one): a message always names a reading stored. Returns that order number.
 */
export const LIMITS_STORE = `${HEAD}
local keptSeq = redis.call('HGET', KEYS[13], 'seq')
if tonumber(keptSeq or '-1') < tonumber(ARGV[3]) then
  redis.call('HSET', KEYS[13], 'json', ARGV[2], 'seq', ARGV[3], 'sentAt', ARGV[4], 'storedOrd', nextOrder(), 'storedFor', ARGV[3])
  redis.call('HDEL', KEYS[13], 'creditSeq', 'credited')
  keptSeq = ARGV[3]
end
if redis.call('GET', KEYS[14]) == ARGV[5] then redis.call('DEL', KEYS[14]) end
redis.call('PUBLISH', ARGV[6], keptSeq)
return keptSeq
`;

/** limitsUnlock: ARGV 2 lock token: frees the lock after a failed read. */
export const LIMITS_UNLOCK = `${HEAD}
if redis.call('GET', KEYS[14]) == ARGV[2] then redis.call('DEL', KEYS[14]) end
return 1
`;

/**
 * inFlight (read-only): ARGV 2 stamp (a reading's order number). What `admit` would subtract for
 * claims for that reading (live claims, and claims released as `'counted'` at or after it, within
 * the retention), without dropping expired leases or claiming. Returns `{cores, ramMiB, instances}`.
 */
export const IN_FLIGHT = `${HEAD}
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
local late = redis.call('ZRANGEBYSCORE', KEYS[3], tonumber(ARGV[2]), '+inf')
for _, id in ipairs(late) do
  local at = tonumber(redis.call('ZSCORE', KEYS[10], id) or '-1')
  local v = redis.call('HGET', KEYS[4], id)
  if v and at > now - tonumber(ARGV[1]) then add(inflight, v) end
end
return inflight
`;

/**
 * liveClaims (read-only): the ids of the claims whose lease has not expired by Redis's clock
 * (released claims are gone from `claimexp`). Returns a list of claim ids.
 */
export const LIVE_CLAIMS = `${HEAD}
return redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. now, '+inf')
`;

/**
 * freed: ARGV 2 channel, 3 message, 4 the credit's claim id ('' none), 5 its `keptSeq` ('' none).
 * With a credit that holds (see `luaChunks.ts` CREDIT: the kept reading is the one of `keptSeq`, sent
 * after the claim's `'counted'` release, and the claim not credited to it yet), subtracts the claim's
 * needs from the kept reading's usage and leaves it as fresh as it was. Otherwise notes the order
 * number of the confirmed deletion (`freedSeq`: readings sent before it are no longer handed out as
 * fresh). Either way publishes the wake-up in the same step, so a woken waiter never gets a reading
 * that still counts the deleted server. Returns 1 when the credit applied, else 0.
 */
export const FREED = `${HEAD}${CREDIT}
local credited = 0
if (ARGV[4] or '') ~= '' then credited = creditKept(ARGV[4], ARGV[5] or '') end
if credited == 0 then redis.call('HSET', KEYS[13], 'freedSeq', nextOrder()) end
redis.call('PUBLISH', ARGV[2], ARGV[3])
return credited
`;
