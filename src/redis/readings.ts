/**
 * The kept `/limits` reading of the Redis ledger, as `limits` and `acquire` use it: handed out
 * while fresh, refreshed by one holder at a time under the refresh lock, and (with `acquire`)
 * admitted on in the same script: one round trip when the kept reading is fresh, two around
 * Nova's `read` otherwise.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import type { Clock, ResourceAmounts } from '../core/index.js';
import { throwIfAborted } from '../errors/index.js';
import { FreshWhenAsked, refutedOrder, type AcquireRequest, type Acquisition, type LedgerClaim, type LedgerLimits, type LedgerPlace, type LimitsRead, type LimitsReading, type UncountedRead, type UncountedServer } from '../ledger/index.js';
import type { LedgerCommand } from './connection.js';
import { amounts, decodeReading, encodeReading, needsArgs } from './codec.js';
import type { ResolvedOptions } from './options.js';
import type { ReadingAges } from './readingAges.js';
import type { KeptSeen } from './keptSeen.js';

/** A `/limits` read as the guard hands it to a ledger. */
type Read = LimitsRead;

/** What `limitsOn` and `acquireOn` use of the ledger. */
export interface LedgerInternals {
  /** Run a script with the scope's keys and the holder's arguments. */
  run(name: LedgerCommand, args: ReadonlyArray<string | number>): Promise<unknown>;
  readonly ages: ReadingAges;
  /** The newest kept reading known stored (`keptSeen()`): every answer that carries one is noted. */
  readonly kept: KeptSeen;
  readonly clock: Clock;
  readonly opts: ResolvedOptions;
  readonly holder: string;
  /** The channel of "a new reading is kept". */
  readonly limitsChannel: string;
  /** Wait for a "kept reading refreshed" message or `ms`, whichever comes first (rejects on abort). */
  waitForReading(ms: number, signal: AbortSignal | undefined): Promise<void>;
  /** A place this ledger now holds (the heartbeat renews it). */
  keepPlace(id: string, seq: number, record: string): void;
  /** A place this ledger no longer holds. */
  forgetPlace(id: string): void;
  /** A claim this ledger now holds. */
  remember(id: string, needs: ResourceAmounts, token: number, ttlMs: number): LedgerClaim;
  /** The live holders of a script's answer (its `holders()` entries), kept for `members()`; returns how many. */
  sawMembers(entries: unknown): number;
}

/**
 * `limits` + `admit` (+ `join` when short and asked to) in one script when the kept reading is
 * fresh: ONE round trip. When it is not, the same script takes the refresh lock; this ledger
 * then calls `read` (Nova) and one more script keeps the reading and admits on it, but only if
 * the lock is still this ledger's (a lock that expired while Nova answered means another holder
 * may have refreshed: no admission on this reading, the ledger asks again). While another holder
 * refreshes, this one waits for its "kept reading refreshed" message (or polls every 250 ms), at
 * most `limitsLockMs + commandTimeoutMs`, through `waitForOthersRead` (the guard's ledger time limit
 * pauses: the wait is Nova's time); then it answers "not admitted" on what it has and the
 * guard tries again. A reading is fresh only when Redis's clock and this ledger's own clock both
 * say it is at most `limitsMaxAgeMs` old (see `docs/fleet-ledger.md`, "Clock steps"); after a wait
 * for another holder's refresh, old counted from the call's first ask (`FreshWhenAsked`: the
 * reading it waited for is its own, however slow Nova was). With
 * `request.staleShortMs`, a kept reading up to that old (on Redis's clock) that was sent after the
 * last confirmed deletion and leaves the needs short answers "not admitted" at once (state
 * `short`), with no lock and no read: such a reading can only overstate the usage (the claims
 * cover the creates since), except for quota freed outside the ledger.
 *
 * With `uncounted`, a store that was never `vetted` (new, or emptied by a restart: this ledger
 * cannot tell which) admits nothing until one holder has listed the servers Nova does not count
 * yet into it (state `vet`, under the refresh lock: `uncounted`, then the VETTED script, which
 * holds each as a claim for `placeTtlMs` and makes every kept reading stale); the others wait for
 * its message as for a refresh. A new fleet pays one listing; see `docs/fleet-ledger.md`. While
 * Redis has been up less than `restartGraceMs`, such a store answers "not admitted" at once
 * (state `young`: no listing yet, the guard waits and asks again).
 * @throws `RedisLedgerError` when Redis fails; `AbortError` when `signal` aborts; what
 * `read` or `uncounted` throws (the refresh lock is given back first).
 */
export async function acquireOn(x: LedgerInternals, request: AcquireRequest, read: Read, signal: AbortSignal | undefined, uncounted?: UncountedRead): Promise<Acquisition> {
  const needs = needsArgs('acquire', request.needs);
  const placeId = request.place?.id ?? '';
  const claimId = randomUUID();
  const newPlace = randomUUID();
  const lock = randomUUID();
  const common = [placeId, ...needs, Math.ceil(request.ttlMs), x.holder, claimId, request.joinIfShort ? '1' : '0', newPlace, x.opts.placeTtlMs];
  const deadline = x.clock.now() + x.opts.limitsLockMs + x.opts.commandTimeoutMs;
  const fresh = new FreshWhenAsked(x.clock, x.opts.limitsMaxAgeMs);
  // A reading Nova's quota check refuted for this call (and any older) is not fresh for it.
  const refuted = refutedOrder(request);
  let last: unknown[] | undefined;
  for (;;) {
    throwIfAborted(signal);
    const sentLocal = x.clock.now();
    const res = (await x.run('novaGuardAcquire', [...common, fresh.maxAgeMs(sentLocal), x.opts.limitsLockMs, lock, Math.max(x.ages.staleSeq(), refuted), uncounted ? '1' : '0', x.opts.restartGraceMs, Math.max(0, Math.floor(request.staleShortMs ?? 0))])) as unknown[];
    const state = String(res[0]);
    // The reading kept in Redis when it answered (never the order number of this caller's read to come).
    x.kept.note(res[15]);
    if (state === 'vet' && uncounted) {
      await vet(x, uncounted, lock, signal);
      continue;
    }
    // Redis has been up less than restartGraceMs: nothing admitted yet (the guard waits and asks again).
    if (state === 'young') return acquisition(x, res, request, claimId, newPlace, undefined, sentLocal, true);
    // Still short on a kept reading no deletion was confirmed after (request.staleShortMs): no read.
    if (state === 'short') return acquisition(x, res, request, claimId, newPlace, undefined, sentLocal);
    if (state === 'fresh') {
      x.ages.saw(Number(res[10]), sentLocal);
      return acquisition(x, res, request, claimId, newPlace, undefined, sentLocal);
    }
    if (state === 'lock') {
      const sendSeq = Number(res[10]);
      const sentAt = Number(res[11]);
      let reading: LimitsReading;
      try {
        // The caller may have given up while Redis answered: no read for it.
        throwIfAborted(signal);
        reading = await read(signal);
      } catch (error) {
        await x.run('novaGuardLimitsUnlock', [lock]).catch(() => {});
        throw error;
      }
      x.ages.saw(sendSeq, sentLocal);
      const stored = (await x.run('novaGuardStoreAdmit', [...common, encodeReading(reading), sendSeq, sentAt, lock, x.limitsChannel])) as unknown[];
      // This caller's reading when the script stored it, else the newer one kept.
      x.kept.note(stored[15]);
      if (String(stored[0]) === 'stored') return acquisition(x, stored, request, claimId, newPlace, reading, sentLocal);
      last = stored;
    } else last = res;
    if (x.clock.now() >= deadline) return acquisition(x, last, request, claimId, newPlace, undefined, sentLocal, true);
    // Another holder's Nova read: Nova's time, not the ledger's (the guard's time limit pauses).
    if (state !== 'lock') await fresh.waitForOthers(read, x.waitForReading(Math.min(250, Math.max(1, deadline - x.clock.now())), signal));
  }
}

/**
 * The `vet` of {@link acquireOn}: list the servers Nova does not count yet and hold them in the
 * store (VETTED), under the refresh lock `lock` (given back when the listing fails).
 * @throws what `uncounted` throws; `RedisLedgerError` when Redis fails.
 */
async function vet(x: LedgerInternals, uncounted: UncountedRead, lock: string, signal: AbortSignal | undefined): Promise<void> {
  let servers: readonly UncountedServer[];
  try {
    // The caller may have given up while Redis answered: no listing for it.
    throwIfAborted(signal);
    servers = await uncounted(signal);
  } catch (error) {
    await x.run('novaGuardLimitsUnlock', [lock]).catch(() => {});
    throw error;
  }
  const held = servers.flatMap((s) => {
    const serverId = s.serverId.replace(/,/g, '');
    return [s.claimId ?? `server:${serverId}`, `${needsArgs('vet', s.needs).join(',')},0,${x.holder.replace(/,/g, '')},${serverId}`];
  });
  await x.run('novaGuardVetted', [lock, x.limitsChannel, x.opts.placeTtlMs, ...held]);
}

/** An acquire answer (`res`: the shape of the ACQUIRE script's) as an {@link Acquisition}. */
function acquisition(x: LedgerInternals, res: unknown[], request: AcquireRequest, claimId: string, newPlace: string, own: LimitsReading | undefined, at: number, giveUp = false): Acquisition {
  const inFlight = amounts(res, 3);
  const ahead = amounts(res, 6);
  const json = String(res[9] ?? '');
  const seq = Number(res[10]);
  const sentAt = Number(res[11]);
  const redisNow = Number(res[12]);
  const holders = x.sawMembers(res[13]);
  const joinSeq = Number(res[14]);
  x.ages.order(seq);
  let reading: LedgerLimits;
  if (own !== undefined) reading = { absolute: own.absolute, requestId: own.requestId, stamp: seq, ageMs: 0, shared: false };
  else if (json !== '') reading = { ...decodeReading(json), stamp: seq, ageMs: x.ages.ageMs(seq, sentAt, redisNow, at), shared: true };
  else reading = { absolute: {}, requestId: undefined, stamp: seq, ageMs: 0, shared: true };
  if (giveUp || Number(res[1]) !== 1) {
    let place: LedgerPlace | undefined;
    if (!giveUp && joinSeq > 0) {
      x.keepPlace(newPlace, joinSeq, needsArgs('acquire', request.needs).join(','));
      place = { id: newPlace, needs: { ...request.needs } };
    }
    return { admitted: false, inFlight, ahead, holders, reading, place };
  }
  if (request.place !== undefined) x.forgetPlace(request.place.id);
  return { admitted: true, claim: x.remember(claimId, request.needs, Number(res[2]), request.ttlMs), inFlight, ahead, holders, reading };
}

/**
 * `limits` (the ledger's own, under `peek`: the guard's `headroom()`): the kept reading when fresh (one round trip), else a
 * read through `read` under the refresh lock, kept for the others (a failed keep does not fail the
 * caller's reading); while another holder refreshes, a wait for its message (or a poll every
 * 250 ms), at most `limitsLockMs + commandTimeoutMs`, after which the stale kept reading (or, with
 * none, a read of this caller's own) is handed out.
 * @throws `RedisLedgerError` when Redis fails; `AbortError` when `signal` aborts; what
 * `read` throws (the refresh lock is given back first).
 */
export async function limitsOn(x: LedgerInternals, read: Read, signal: AbortSignal | undefined): Promise<LedgerLimits> {
  const lock = randomUUID();
  const deadline = x.clock.now() + x.opts.limitsLockMs + x.opts.commandTimeoutMs;
  const fresh = new FreshWhenAsked(x.clock, x.opts.limitsMaxAgeMs);
  for (;;) {
    throwIfAborted(signal);
    const sentLocal = x.clock.now();
    const res = (await x.run('novaGuardLimitsBegin', [fresh.maxAgeMs(sentLocal), x.opts.limitsLockMs, lock, x.ages.staleSeq()])) as unknown[];
    const [state, json, seq, sentAt, now, sendSeq] = [String(res[0]), String(res[1] ?? ''), Number(res[2]), Number(res[3]), Number(res[4]), Number(res[5])];
    const kept = (): LedgerLimits => ({ ...decodeReading(json), stamp: seq, ageMs: x.ages.ageMs(seq, sentAt, now, sentLocal), shared: true });
    // In every state `seq` is the kept reading's (`sendSeq` is the one of a read still to be sent).
    if (json !== '') x.kept.note(seq);
    if (state === 'fresh') {
      x.ages.saw(seq, sentLocal);
      return kept();
    }
    if (state === 'lock' || x.clock.now() >= deadline) {
      if (state !== 'lock' && json !== '') return kept();
      let reading: LimitsReading;
      try {
        // The caller may have given up while Redis answered: no read for it.
        throwIfAborted(signal);
        reading = await read(signal);
      } catch (error) {
        if (state === 'lock') await x.run('novaGuardLimitsUnlock', [lock]).catch(() => {});
        throw error;
      }
      x.ages.saw(sendSeq, sentLocal);
      // A reading kept for the others is a bonus; this caller's reading stands even if Redis fails now.
      await x.run('novaGuardLimitsStore', [encodeReading(reading), sendSeq, now, lock, x.limitsChannel]).then(
        (keptSeq) => x.kept.note(keptSeq),
        () => {},
      );
      return { absolute: reading.absolute, requestId: reading.requestId, stamp: sendSeq, ageMs: 0, shared: false };
    }
    await fresh.waitForOthers(read, x.waitForReading(Math.min(250, Math.max(1, deadline - x.clock.now())), signal));
  }
}

