/**
 * Command sequences for the differential test: their generator (fast-check), and a runner that
 * plays one sequence on a backend's store and on the reference model (`model.ts`) in lockstep,
 * throwing at the first step where they differ (an admission decided otherwise, other `inFlight` or
 * `ahead` amounts, a renewal answered otherwise, a fencing token not above every earlier one) or
 * where an admission takes more than the quota.
 *
 * Besides the ledger's own calls: `empty` (the store loses its state under its holders, skipped
 * where it cannot: {@link TestStore.emptied}) and `clockStep` (the wall clock steps by hours, the
 * monotonic one does not: {@link TestStore.stepWall}); see `docs/ledger-conformance.md`.
 *
 * Commands go through the ledger objects (the Lua scripts of Redis, the SQL transactions of
 * SQLite), admissions along the guard's own path (`admitAsGuard`).
 */
import fc from 'fast-check';
import type { AbsoluteLimits, ResourceAmounts } from '../../src/core/types.js';
import type { AcquireRequest, LedgerClaim, LedgerPlace, LimitsRead, QuotaLedger } from '../../src/ledger/index.js';
import { absoluteFor, admitAsGuard, type TestStore } from './backends.js';
import * as M from './model.js';

/** Lease of every claim, in ms: beyond any sequence (only a `lapse` ends one by time). */
export const LONG_TTL_MS = 600_000;
/** A `lapse`: the claim renewed for this long, then {@link LAPSE_WAIT_MS} pass. */
export const LAPSE_TTL_MS = 1;
export const LAPSE_WAIT_MS = 15;

/**
 * What another call does while a reading is in flight. `lapse` there (a lease running out between
 * a reading's send and its admission) is not generated: the backends differ on it (see
 * `docs/ledger-conformance.md`, "Divergences").
 */
export type During = { readonly k: 'release'; readonly pick: number; readonly end: 'counted' | 'not-created' } | { readonly k: 'lapse'; readonly pick: number };
export type Cmd =
  | { readonly k: 'attempt'; readonly h: number; readonly pick: number | null; readonly needs: M.Needs; readonly during: readonly During[] }
  | { readonly k: 'release'; readonly pick: number; readonly end: 'counted' | 'not-created' }
  | { readonly k: 'renew'; readonly pick: number }
  | { readonly k: 'bind'; readonly pick: number }
  | { readonly k: 'leave'; readonly pick: number }
  | { readonly k: 'lapse'; readonly pick: number }
  | { readonly k: 'crash'; readonly h: number }
  | { readonly k: 'claimAnyway'; readonly h: number; readonly needs: M.Needs }
  | { readonly k: 'outside'; readonly delta: M.Needs; readonly free: boolean }
  | { readonly k: 'empty' }
  | { readonly k: 'clockStep'; readonly hours: number };

export interface Sequence {
  readonly quota: M.Quota;
  readonly used: M.Needs;
  readonly cmds: readonly Cmd[];
}

/** Needs of one call: each resource from `min` (0 allowed: numeric needs may leave a resource out). */
export const needsArb = (min = 1): fc.Arbitrary<M.Needs> => fc.record({ cores: fc.integer({ min, max: 4 }), ramMiB: fc.integer({ min, max: 4 }), instances: fc.integer({ min, max: 2 }) });
const pickArb = fc.nat({ max: 40 });
const endArb = fc.constantFrom('counted' as const, 'not-created' as const);

/** Sequences of up to `maxCommands` commands (attempts weighted up). `minNeeds`: the least amount of each resource a need has. */
export function sequenceArb(maxCommands = 30, minNeeds = 0): fc.Arbitrary<Sequence> {
  const needs = needsArb(minNeeds);
  const during: fc.Arbitrary<During> = fc.record({ k: fc.constant('release' as const), pick: pickArb, end: endArb });
  const cmd: fc.Arbitrary<Cmd> = fc.oneof(
    { weight: 6, arbitrary: fc.record({ k: fc.constant('attempt' as const), h: fc.integer({ min: 0, max: 1 }), pick: fc.option(pickArb, { nil: null }), needs, during: fc.array(during, { maxLength: 3 }) }) },
    { weight: 3, arbitrary: fc.record({ k: fc.constant('release' as const), pick: pickArb, end: endArb }) },
    { weight: 1, arbitrary: fc.record({ k: fc.constant('renew' as const), pick: pickArb }) },
    { weight: 1, arbitrary: fc.record({ k: fc.constant('bind' as const), pick: pickArb }) },
    { weight: 2, arbitrary: fc.record({ k: fc.constant('leave' as const), pick: pickArb }) },
    { weight: 1, arbitrary: fc.record({ k: fc.constant('lapse' as const), pick: pickArb }) },
    { weight: 1, arbitrary: fc.record({ k: fc.constant('crash' as const), h: fc.integer({ min: 0, max: 1 }) }) },
    { weight: 1, arbitrary: fc.record({ k: fc.constant('claimAnyway' as const), h: fc.integer({ min: 0, max: 1 }), needs }) },
    { weight: 1, arbitrary: fc.record({ k: fc.constant('outside' as const), delta: needsArb(0), free: fc.boolean() }) },
    { weight: 1, arbitrary: fc.record({ k: fc.constant('empty' as const) }) },
    { weight: 1, arbitrary: fc.record({ k: fc.constant('clockStep' as const), hours: fc.integer({ min: -48, max: 48 }).filter((h) => h !== 0) }) },
  );
  const limit = (min: number, max: number): fc.Arbitrary<number | undefined> => fc.option(fc.integer({ min, max }), { nil: undefined, freq: 6 });
  return fc.record({
    quota: fc.record({ cores: limit(2, 10), ramMiB: limit(2, 10), instances: limit(1, 5) }),
    used: fc.record({ cores: fc.integer({ min: 0, max: 3 }), ramMiB: fc.integer({ min: 0, max: 3 }), instances: fc.integer({ min: 0, max: 1 }) }),
    cmds: fc.array(cmd, { minLength: 6, maxLength: maxCommands, size: 'max' }),
  });
}

/** Pick the `pick`-th (modulo) of `ids`, or undefined when there is none. */
const choose = (ids: readonly number[], pick: number): number | undefined => (ids.length === 0 ? undefined : ids[pick % ids.length]);
const range = (n: number): number[] => [...Array(n).keys()];

/** What the sequences played so far exercised (for the test's report: a suite that never queues proves little). */
export const exercised = {
  sequences: 0,
  admitted: 0,
  short: 0,
  shortBehindPlaces: 0,
  countedSubtracted: 0,
  lapses: 0,
  crashes: 0,
  renewLost: 0,
  /** Stores emptied under their holders (and every holder back). */
  empties: 0,
  /** `empty` commands skipped: the backend's store cannot be emptied (`Backend.cannotEmpty`). */
  emptySkipped: 0,
  /** Claims only admitted that an empty took (their renewal then answers false). */
  emptyDropped: 0,
  /** Posting claims an empty took and their holders wrote back. */
  emptyRestored: 0,
  /** Admissions tried during the settle after an empty (none may admit), and the `/limits` reads they made. */
  settleProbes: 0,
  settleProbeReads: 0,
  /** Sequences with an empty that made an admission after it. */
  admittedAfterEmpty: 0,
  /** Wall-clock steps, and those made while a claim was live. */
  clockSteps: 0,
  clockStepsWithLiveClaims: 0,
  /** Sequences with a wall-clock step that renewed, lapsed or admitted after it. */
  actedAfterClockStep: 0,
};

/** A divergence between a backend and the model (or a broken invariant), with the step that showed it. */
export class Divergence extends Error {}

const show = (n: M.Needs): string => `${n.cores}/${n.ramMiB}/${n.instances}`;
const same = (a: ResourceAmounts, b: ResourceAmounts): boolean => a.cores === b.cores && a.ramMiB === b.ramMiB && a.instances === b.instances;

/**
 * Play `seq` on `store` and on the model. `wrap` wraps every ledger object the holders use (a
 * planted fault). Returns a log of the steps (for a report); throws {@link Divergence}.
 */
export async function runSequence(store: TestStore, seq: Sequence, wrap: (l: QuotaLedger) => QuotaLedger = (l) => l): Promise<string[]> {
  const s = M.initialState(seq.quota, seq.used);
  exercised.sequences++;
  const holders = [wrap(store.holder()), wrap(store.holder())];
  const places = new Map<number, LedgerPlace>();
  const claims: LedgerClaim[] = [];
  /**
   * The ledger object that took each claim. A lapse renews a claim for 1 ms through it, also when
   * its holder crashed: the lease is the one its holder keeps (a crashed holder's object is one no
   * command drives any more; it still runs, so it would write a claim back after an empty on the
   * lease it last knew).
   */
  const owners: QuotaLedger[] = [];
  let maxToken = 0;
  let emptiedHere = false;
  let steppedHere = false;
  let countedAfterEmpty = false;
  let countedAfterStep = false;
  const after = (): void => {
    if (emptiedHere && !countedAfterEmpty) {
      countedAfterEmpty = true;
      exercised.admittedAfterEmpty++;
    }
  };
  const afterStep = (): void => {
    if (steppedHere && !countedAfterStep) {
      countedAfterStep = true;
      exercised.actedAfterClockStep++;
    }
  };
  const log: string[] = [];
  const fail = (what: string): never => {
    throw new Divergence(`${store.backend}: ${what}\n  steps so far:\n    ${log.join('\n    ')}`);
  };
  const token = (c: LedgerClaim, where: string): void => {
    if (!(c.token > maxToken)) fail(`${where}: fencing token ${c.token} not above the highest before (${maxToken})`);
    maxToken = c.token;
  };
  const liveOwn = (): number[] => range(s.claims.length).filter((i) => s.claims[i]!.live && !s.claims[i]!.orphan);
  const releaseStep = async (pick: number, end: 'counted' | 'not-created', where: string): Promise<void> => {
    const i = choose(liveOwn(), pick);
    if (i === undefined) return;
    log.push(`${where}release claim#${i} ${end}`);
    await holders[s.claims[i]!.holder]!.release(claims[i]!, end);
    M.release(s, i, end);
  };
  const lapseStep = async (pick: number, where: string): Promise<void> => {
    const live = range(s.claims.length).filter((i) => s.claims[i]!.live);
    const i = choose(live, pick);
    if (i === undefined) return;
    log.push(`${where}lapse claim#${i} (renewed for ${LAPSE_TTL_MS} ms, then ${LAPSE_WAIT_MS} ms pass)`);
    const got = await owners[i]!.renew(claims[i]!, LAPSE_TTL_MS);
    if (!got) fail(`renew of live claim#${i} before its lapse answered false`);
    await store.pass(LAPSE_WAIT_MS);
    M.lapse(s, i);
    exercised.lapses++;
    afterStep();
  };

  for (const cmd of seq.cmds) {
    store.step();
    switch (cmd.k) {
      case 'attempt': {
        const waiting = range(s.calls.length).filter((i) => s.calls[i]!.queued && !s.calls[i]!.orphan);
        let call = cmd.pick === null ? undefined : choose(waiting, cmd.pick);
        if (call === undefined) {
          s.calls.push({ needs: cmd.needs, holder: cmd.h, queued: false, orphan: false, done: false });
          call = s.calls.length - 1;
        }
        const c = s.calls[call]!;
        const headroom = M.headroomNow(s);
        const absolute = absoluteFor(headroom, s.used);
        const within = M.withinQuota(s);
        log.push(`attempt call#${call} (holder ${c.holder}, needs ${show(c.needs)}${c.queued ? ', queued' : ''}) on headroom ${JSON.stringify(headroom)}`);
        let stamp = -1;
        await store.beforeReading();
        const attempt = await admitAsGuard(holders[c.holder]!, { needs: c.needs, place: places.get(call), ttlMs: LONG_TTL_MS }, absolute, async () => {
          stamp = M.openReading(s);
          for (const d of cmd.during) {
            if (d.k === 'release') await releaseStep(d.pick, d.end, '  during the read: ');
            else await lapseStep(d.pick, '  during the read: ');
          }
        });
        if (!attempt.read) fail('the ledger handed out a kept reading (the suite needs every admission on its own reading)');
        const want = M.decide(s, call, c.needs, headroom, stamp);
        const got = attempt.admission;
        log.push(`  -> ${got.admitted ? 'admitted' : 'short'} inFlight ${show(got.inFlight)} ahead ${show(got.ahead)} (model: ${want.fits ? 'admitted' : 'short'} inFlight ${show(want.inFlight)} ahead ${show(want.ahead)})`);
        if (got.admitted !== want.fits) fail(`admission of call#${call}: backend ${got.admitted ? 'admitted' : 'refused'}, model ${want.fits ? 'admits' : 'refuses'}`);
        if (!same(got.inFlight, want.inFlight)) fail(`inFlight of call#${call}: backend ${show(got.inFlight)}, model ${show(want.inFlight)}`);
        if (!same(got.ahead, want.ahead)) fail(`ahead of call#${call}: backend ${show(got.ahead)}, model ${show(want.ahead)}`);
        exercised[got.admitted ? 'admitted' : 'short']++;
        afterStep();
        if (got.admitted) after();
        if (!got.admitted && (want.ahead.cores > 0 || want.ahead.ramMiB > 0 || want.ahead.instances > 0)) exercised.shortBehindPlaces++;
        if (s.counted.some((r) => r.order >= stamp)) exercised.countedSubtracted++;
        const claim = M.applyDecision(s, call, want);
        if (got.admitted) {
          token(got.claim, `admission of call#${call}`);
          claims[claim!] = got.claim;
          owners[claim!] = holders[c.holder]!;
          places.delete(call);
          if (within && !M.withinQuota(s)) fail(`admission of call#${call} took more than the quota`);
        } else {
          if (attempt.place === undefined) fail(`call#${call} short without a place in the queue`);
          places.set(call, attempt.place!);
        }
        break;
      }
      case 'release':
        await releaseStep(cmd.pick, cmd.end, '');
        break;
      case 'renew': {
        const mine = range(s.claims.length).filter((i) => !s.claims[i]!.orphan);
        const i = choose(mine, cmd.pick);
        if (i === undefined) break;
        const got = await holders[s.claims[i]!.holder]!.renew(claims[i]!, LONG_TTL_MS);
        log.push(`renew claim#${i} -> ${got}`);
        if (got !== s.claims[i]!.live) fail(`renew of claim#${i}: backend ${got}, model ${s.claims[i]!.live}`);
        if (!got) exercised.renewLost++;
        else s.claims[i]!.posting = true;
        afterStep();
        break;
      }
      case 'bind': {
        const i = choose(liveOwn(), cmd.pick);
        if (i === undefined) break;
        log.push(`bind claim#${i}`);
        await holders[s.claims[i]!.holder]!.bind(claims[i]!, `server-${i}`);
        s.claims[i]!.posting = true;
        break;
      }
      case 'leave': {
        const waiting = range(s.calls.length).filter((i) => s.calls[i]!.queued && !s.calls[i]!.orphan);
        const i = choose(waiting, cmd.pick);
        if (i === undefined) break;
        log.push(`leave call#${i}`);
        await holders[s.calls[i]!.holder]!.leave(places.get(i)!);
        places.delete(i);
        M.leave(s, i);
        break;
      }
      case 'lapse':
        await lapseStep(cmd.pick, '');
        break;
      case 'crash':
        log.push(`holder ${cmd.h} crashes (its claims and places stay; a new ledger object takes its place)`);
        M.crash(s, cmd.h);
        exercised.crashes++;
        holders[cmd.h] = wrap(store.holder());
        break;
      case 'claimAnyway': {
        const c = await holders[cmd.h]!.claimAnyway(cmd.needs, LONG_TTL_MS);
        token(c, 'claimAnyway');
        s.claims.push({ needs: cmd.needs, holder: cmd.h, checked: false, live: true, orphan: false, posting: true });
        claims[s.claims.length - 1] = c;
        owners[s.claims.length - 1] = holders[cmd.h]!;
        log.push(`claimAnyway holder ${cmd.h} ${show(cmd.needs)} -> claim#${s.claims.length - 1}`);
        break;
      }
      case 'outside': {
        const sign = cmd.free ? -1 : 1;
        s.used = { cores: Math.max(0, s.used.cores + sign * cmd.delta.cores), ramMiB: Math.max(0, s.used.ramMiB + sign * cmd.delta.ramMiB), instances: Math.max(0, s.used.instances + sign * cmd.delta.instances) };
        log.push(`outside the ledger: Nova now counts ${show(s.used)}`);
        break;
      }
      case 'empty': {
        if (store.emptied === undefined || store.settle === undefined) {
          log.push('empty the store: skipped (this store cannot be emptied under its holders)');
          exercised.emptySkipped++;
          break;
        }
        const posting = s.claims.filter((c) => c.live && c.posting).length;
        const holding = s.claims.some((c) => c.live) || s.queue.length > 0;
        await store.emptied();
        const dropped = M.empty(s);
        log.push(`the store is emptied (restarted empty), every holder back: ${posting} posting claim(s) written back, ${dropped} only admitted dropped`);
        exercised.empties++;
        exercised.emptyDropped += dropped;
        exercised.emptyRestored += posting;
        emptiedHere = true;
        countedAfterEmpty = false;
        // The write-backs settle: no admission while it runs. An admission tried now reads nothing
        // and admits nothing (it is given up after a while, as the guard bounds its calls).
        // (A store that held nothing may come back without one: there was nothing to lose.)
        const left = await store.settle.remainingMs();
        if (holding && !(left > 0)) fail('no settle after the store was emptied: an admission now would count none of the claims still to be written back');
        if (left > 0) {
          const reads = await settleProbe(holders[0]!, fail);
          log.push(`  an admission tried during the settle (${left} ms left): not admitted, ${reads} /limits read(s) in ${SETTLE_PROBE_MS} ms`);
          exercised.settleProbes++;
          exercised.settleProbeReads += reads;
        }
        // Every holder is back: end the settle (all it waits for), then the store must hold what
        // the model holds: the posting claims, nothing else.
        await store.settle.end();
        await store.beforeReading();
        M.openReading(s);
        const peek = await holders[0]!.peek(async () => ({ absolute: absoluteFor(M.headroomNow(s), s.used), requestId: 'req-peek' }), undefined);
        let held = M.ZERO;
        for (const c of s.claims) if (c.live) held = M.add(held, c.needs);
        log.push(`  -> the store subtracts ${show(peek.inFlight)} (model: ${show(held)})`);
        if (!same(peek.inFlight, held)) fail(`after the empty the store subtracts ${show(peek.inFlight)}, the model ${show(held)} (the posting claims)`);
        break;
      }
      case 'clockStep': {
        const live = s.claims.some((c) => c.live);
        store.stepWall(cmd.hours * 3_600_000);
        log.push(`the wall clock steps ${cmd.hours > 0 ? '+' : ''}${cmd.hours} h (the monotonic clock and the store's own do not move)${live ? ', claims live' : ''}`);
        exercised.clockSteps++;
        if (live) exercised.clockStepsWithLiveClaims++;
        steppedHere = true;
        countedAfterStep = false;
        break;
      }
    }
  }
  return log;
}

/** How long the probe of a settling store waits for an answer before it gives up, in ms. */
export const SETTLE_PROBE_MS = 120;

/**
 * An admission tried while the store settles after its holders' write-backs: it must not admit; it
 * is given up after {@link SETTLE_PROBE_MS} (an `AbortError`, as when the guard's time for the call
 * runs out) or answers "not admitted". Returns how many `/limits` reads it made meanwhile (a read
 * is allowed: the settle refuses the admission, not the reading).
 */
async function settleProbe(ledger: QuotaLedger, fail: (what: string) => never): Promise<number> {
  let reads = 0;
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), SETTLE_PROBE_MS);
  try {
    const a = await ledger.acquire(
      { place: undefined, needs: { cores: 1, ramMiB: 1, instances: 1 }, ttlMs: LONG_TTL_MS, joinIfShort: false },
      async () => {
        reads++;
        return { absolute: absoluteFor({}), requestId: 'req-settle' };
      },
      ac.signal,
    );
    if (a.admitted) fail('an admission during the settle after the empty was admitted');
  } catch (e) {
    if (!ac.signal.aborted) throw e;
  } finally {
    clearTimeout(timer);
  }
  return reads;
}

/** A `/limits` answer with one more of each limit: `needs <= headroom + 1`, the planted off-by-one. */
function maxPlusOne(a: AbsoluteLimits): AbsoluteLimits {
  const bump = (v: number | undefined): number | undefined => (v === undefined || v < 0 ? v : v + 1);
  return { ...a, maxTotalCores: bump(a.maxTotalCores), maxTotalRAMSize: bump(a.maxTotalRAMSize), maxTotalInstances: bump(a.maxTotalInstances) } as AbsoluteLimits;
}

/**
 * A planted fault: `ledger` with an off-by-one in its admission (it admits when `needs <=
 * headroom + 1`): `acquire` decides on a reading that says one more of each limit. Every other
 * member is the ledger's own.
 */
export function offByOne(ledger: QuotaLedger): QuotaLedger {
  return new Proxy(ledger, {
    get(target, p) {
      if (p === 'acquire') {
        return (req: AcquireRequest, read: LimitsRead, signal: AbortSignal | undefined) =>
          target.acquire(
            req,
            async (sig) => {
              const x = await read(sig);
              return { ...x, absolute: maxPlusOne(x.absolute) };
            },
            signal,
          );
      }
      const v: unknown = Reflect.get(target, p, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
