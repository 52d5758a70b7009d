/**
 * The Lua scripts of the fleet watcher's Redis store (`fleetStore.ts`, under the coordinator of
 * `src/delete/fleetWatcher.ts`; see `docs/fleet-ledger.md`, "The fleet watcher"). Each takes the
 * {@link FLEET_KEYS} keys of one ledger scope, in this order:
 *
 * 1. `fleet:lease` (string `<token>:<epoch>`, PX the lease's TTL): who watches for the fleet;
 * 2. `fleet:epoch` (counter): the fencing epoch, one more for each lease taken;
 * 3. `fleet:seq` (counter): the sequence number of the publications;
 * 4. `fleet:stream` (stream, `MAXLEN ~`): the publications (`e` epoch, `s` sequence number, `d` Nova's
 *    `Date` in epoch ms or empty, `o` the observations as JSON);
 * 5. `fleet:gone`, 6. `fleet:goneat` (hash server id -> `<epoch>,<evidence>`; sorted set server id ->
 *    Redis ms): the proofs of deletion published lately, for a host that catches up after a gap;
 * 7. `fleet:interest`, 8. `fleet:want` (sorted set `<instance>|<server id>` -> expiry in Redis ms; hash
 *    of the same members -> `<intervalMs>,<confirmIntervalMs>,<whole 1/0>`, and `#v`, the interest's
 *    version): which servers hosts wait on.
 *
 * Both counters start, when missing (a Redis restarted empty), at Redis's time in ms: numbers after a
 * restart stay above the ones before it, so a restart reads as a gap (consumers fall back and catch
 * up), never as an older epoch.
 *
 * @module
 */

/** How many keys every fleet script takes. */
export const FLEET_KEYS = 8;

/** The key names of the fleet watcher in one ledger scope (`base` ends with `:`). */
export function fleetKeys(base: string): string[] {
  return ['lease', 'epoch', 'seq', 'stream', 'gone', 'goneat', 'interest', 'want'].map((n) => `${base}fleet:${n}`);
}

const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

/** INCR of a counter that starts at Redis's time when missing (see the module). */
const BUMP = `local function bump(key)
  if redis.call('EXISTS', key) == 0 then redis.call('SET', key, now) end
  return redis.call('INCR', key)
end
`;

/**
 * ELECT(token, ttlMs) -> {held (1/0), epoch}: renew the lease when it is this token's, take it (a new
 * epoch) when nobody holds it, else answer the holder's epoch.
 */
export const FLEET_ELECT = `${NOW}${BUMP}
local cur = redis.call('GET', KEYS[1])
if cur then
  local holder, epoch = string.match(cur, '^(.*):(%d+)$')
  if holder == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return {1, tonumber(epoch)}
  end
  return {0, tonumber(epoch or '0')}
end
local epoch = bump(KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. epoch, 'PX', ARGV[2])
return {1, epoch}
`;

/** RESIGN(token): delete the lease if it is this token's. */
export const FLEET_RESIGN = `
local cur = redis.call('GET', KEYS[1])
if cur and string.sub(cur, 1, string.len(ARGV[1]) + 1) == ARGV[1] .. ':' then redis.call('DEL', KEYS[1]) return 1 end
return 0
`;

/**
 * PUBLISH(token, epoch, maxLen, novaDateMs, json, retentionMs, n, id1..idn, evidence1..evidencen) ->
 * the publication's sequence number, or 0 when the lease is not `<token>:<epoch>` (fencing at the
 * store: a deposed watcher publishes nothing). Keeps the n proofs in `fleet:gone` and drops those
 * older than `retentionMs`.
 */
export const FLEET_PUBLISH = `${NOW}${BUMP}
if redis.call('GET', KEYS[1]) ~= ARGV[1] .. ':' .. ARGV[2] then return 0 end
local seq = bump(KEYS[3])
redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[3], '*', 'e', ARGV[2], 's', seq, 'd', ARGV[4], 'o', ARGV[5])
local n = tonumber(ARGV[7])
for i = 1, n do
  redis.call('HSET', KEYS[5], ARGV[7 + i], ARGV[2] .. ',' .. ARGV[7 + n + i])
  redis.call('ZADD', KEYS[6], now, ARGV[7 + i])
end
local old = redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', now - tonumber(ARGV[6]), 'LIMIT', 0, 200)
if #old > 0 then
  redis.call('HDEL', KEYS[5], unpack(old))
  redis.call('ZREM', KEYS[6], unpack(old))
end
return seq
`;

/**
 * REGISTER(instance, n, [id, remainingMs, intervalMs, confirmIntervalMs, whole] x n, r, id x r) -> flat
 * {id, '<epoch>,<evidence>', ...}: the kept proofs of the n servers registered. Registers (or
 * updates) this instance's interest in n servers, until Redis's now + remainingMs; removes r. When n
 * > 0 it counts up the interest's version (field `#v` of `fleet:want`, never a member), which the
 * watcher checks between its rounds to take new interest at once.
 */
export const FLEET_REGISTER = `${NOW}
local inst = ARGV[1]
local n = tonumber(ARGV[2])
local i = 3
local out = {}
for k = 1, n do
  local m = inst .. '|' .. ARGV[i]
  redis.call('ZADD', KEYS[7], now + tonumber(ARGV[i + 1]), m)
  redis.call('HSET', KEYS[8], m, ARGV[i + 2] .. ',' .. ARGV[i + 3] .. ',' .. ARGV[i + 4])
  local g = redis.call('HGET', KEYS[5], ARGV[i])
  if g then
    table.insert(out, ARGV[i])
    table.insert(out, g)
  end
  i = i + 5
end
if n > 0 then redis.call('HINCRBY', KEYS[8], '#v', 1) end
local r = tonumber(ARGV[i])
for k = 1, r do
  local m = inst .. '|' .. ARGV[i + k]
  redis.call('ZREM', KEYS[7], m)
  redis.call('HDEL', KEYS[8], m)
end
return out
`;

/**
 * INTEREST() -> flat {member, remainingMs, '<intervalMs>,<confirmIntervalMs>,<whole>', ..., version}:
 * the live interest of every host (expired members dropped first), then the interest's version (see
 * REGISTER; '0' when none).
 */
export const FLEET_INTEREST = `${NOW}
local old = redis.call('ZRANGEBYSCORE', KEYS[7], '-inf', now, 'LIMIT', 0, 200)
if #old > 0 then
  redis.call('ZREM', KEYS[7], unpack(old))
  redis.call('HDEL', KEYS[8], unpack(old))
end
local live = redis.call('ZRANGE', KEYS[7], 0, -1, 'WITHSCORES')
local out = {}
for k = 1, #live, 2 do
  table.insert(out, live[k])
  table.insert(out, tonumber(live[k + 1]) - now)
  table.insert(out, redis.call('HGET', KEYS[8], live[k]) or '')
end
table.insert(out, redis.call('HGET', KEYS[8], '#v') or '0')
return out
`;

/** The fleet scripts, by command name. */
export const FLEET_COMMANDS = {
  novaGuardFleetElect: FLEET_ELECT,
  novaGuardFleetResign: FLEET_RESIGN,
  novaGuardFleetPublish: FLEET_PUBLISH,
  novaGuardFleetRegister: FLEET_REGISTER,
  novaGuardFleetInterest: FLEET_INTEREST,
} as const;

/** A fleet script command name. */
export type FleetCommand = keyof typeof FLEET_COMMANDS;
