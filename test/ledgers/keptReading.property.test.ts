/**
 * Over-commit with kept readings, on every backend (a real SQLite file, a redis-server this file
 * starts, the in-process ledger): random sequences of admissions on readings kept for the whole
 * sequence (`limitsMaxAgeMs` far longer than it), creates, releases `'counted'` (also while another
 * holder's reading is in flight, the case the double-count rule reads again for), releases
 * `'not-created'`, claims whose lease lapses (their holder hung or died, before or after its POST), confirmed deletions published with and without a credit (`FreedCredit`), places
 * queued ahead and `staleShortMs` re-checks, by two or three holders of one store, the store
 * emptied under them where it can be (Redis restarted empty: the settle of the write-backs). A simulated Nova
 * answers each `/limits` read from what exists at that moment. After every admission, what the fleet
 * holds (the servers Nova counts plus the claims whose server is not created yet) must be within the
 * quota. And a call answered "short" on a kept reading without a read (no place queued) must be
 * truly short: short even with every claim not ended held beside what Nova counts, never short
 * because a server the reading counts was subtracted again as a late 'counted' claim (the
 * double-count rule by admission order; `refute` makes a holder read anew, so readings that count
 * created servers whose claims end later are kept). The differential test (`differential.property.test.ts`) decides on fresh readings only; this
 * one is about the readings other holders kept, their credits and their double-count rule.
 * Runs per backend: `NOVA_GUARD_KEPT_RUNS` (default 60).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LedgerClaim, LedgerPlace, QuotaLedger } from '../../src/ledger/index.js';
import { absoluteFor, backends, type TestStore } from './backends.js';

const RUNS = Math.max(1, Number(process.env.NOVA_GUARD_KEPT_RUNS ?? '') || 60);
const LONG = 600_000;
/** The lease of a claim whose holder hangs or dies: it lapses within a `pass` or two (`pass` is up to 50 ms). */
const SHORT = 60;
const QUOTA = 8;

type Op =
  | { k: 'acquire'; h: number; cores: number; join: boolean; staleShort: boolean; duringRead: 'none' | 'counted' | 'create'; lapses: boolean; refute: boolean }
  | { k: 'create'; i: number }
  | { k: 'counted'; i: number }
  | { k: 'notCreated'; i: number }
  | { k: 'delete'; i: number; credit: boolean; h: number }
  | { k: 'leave'; i: number }
  | { k: 'pass'; ms: number }
  | { k: 'empty'; endSettle: boolean };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ k: fc.constant('acquire' as const), h: fc.nat(2), cores: fc.integer({ min: 1, max: 4 }), join: fc.boolean(), staleShort: fc.boolean(), duringRead: fc.constantFrom('none' as const, 'counted' as const, 'create' as const), lapses: fc.boolean(), refute: fc.integer({ min: 0, max: 3 }).map((n) => n === 0) }) },
  { weight: 3, arbitrary: fc.record({ k: fc.constant('create' as const), i: fc.nat(20) }) },
  { weight: 3, arbitrary: fc.record({ k: fc.constant('counted' as const), i: fc.nat(20) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('notCreated' as const), i: fc.nat(20) }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('delete' as const), i: fc.nat(20), credit: fc.boolean(), h: fc.nat(2) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('leave' as const), i: fc.nat(5) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('pass' as const), ms: fc.integer({ min: 1, max: 50 }) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('empty' as const), endSettle: fc.boolean() }) },
);

interface Held {
  readonly ledger: QuotaLedger;
  readonly claim: LedgerClaim;
  readonly cores: number;
  /** Its lease is short: it lapses (its holder hung or died), created or not. */
  readonly short: boolean;
  /** When it was admitted (see `elapsed` in `play`). */
  readonly admittedAt: number;
  created: boolean;
  /** Released 'counted' (its server exists and Nova counts it). */
  counted: boolean;
  ended: boolean;
  serverId: string;
}

async function play(store: TestStore, ops: readonly Op[]): Promise<void> {
  const holders = [0, 1, 2].map(() => store.holder({ limitsMaxAgeMs: LONG }));
  const held: Held[] = [];
  const places: Array<{ ledger: QuotaLedger; place: LedgerPlace }> = [];
  let novaUsed = 0;
  let servers = 0;
  // The store was emptied (Redis restarted): its settle answers without a read (no false-short check).
  let emptiedOnce = false;
  // The store's time as this test can follow it: manual clocks move 1 ms a step and by each pass;
  // Redis runs on its own (real) clock.
  let manualMs = 0;
  const elapsed = (): number => (store.backend === 'redis' ? performance.now() : manualMs);
  // A claim of a short lease not created yet: surely live until its lease is nearly over, surely
  // lapsed (its holder's renewal answers false: nothing is created on it) well after; in between it
  // is not counted (the check is then only weaker, never wrong).
  const SLACK_MS = 15;
  const uncreated = (): number =>
    held.filter((c) => !c.ended && !c.created && (!c.short || elapsed() - c.admittedAt < SHORT - SLACK_MS)).reduce((s, c) => s + c.cores, 0);
  const pick = (i: number, ok: (c: Held) => boolean): Held | undefined => {
    const open = held.filter(ok);
    return open.length === 0 ? undefined : open[i % open.length];
  };
  // The guard's create: it renews the claim right before its POST (the fencing point: from then on
  // the claim is posting); a claim the store lost meanwhile (only admitted when it was emptied) is
  // not renewed, and nothing is created on it.
  const create = async (c: Held): Promise<void> => {
    // (a claim of a short lease keeps it: its holder hangs after its POST, and the lease lapses)
    if (!(await c.ledger.renew(c.claim, c.short ? SHORT : LONG))) {
      c.ended = true;
      return;
    }
    c.created = true;
    novaUsed += c.cores;
    c.serverId = `srv-${++servers}`;
    await c.ledger.bind(c.claim, c.serverId);
  };
  const releaseCounted = async (c: Held): Promise<void> => {
    c.counted = true;
    c.ended = true;
    await c.ledger.release(c.claim, 'counted');
  };
  for (const op of ops) {
    store.step();
    manualMs += 1;
    switch (op.k) {
      case 'acquire': {
        const ledger = holders[op.h]!;
        const read = async () => {
          await store.beforeReading();
          const absolute = absoluteFor({ cores: Math.max(0, QUOTA - novaUsed) }, { cores: novaUsed });
          // Something happens while this reading is on its way (after Nova answered it).
          if (op.duringRead === 'counted') {
            const c = pick(0, (x) => !x.ended && x.created);
            if (c) await releaseCounted(c);
          } else if (op.duringRead === 'create') {
            const c = pick(0, (x) => !x.ended && !x.created);
            if (c) await create(c);
          }
          return { absolute, requestId: 'req-kept' };
        };
        const mine = places.find((p) => p.ledger === ledger);
        // (taken before the call: its lease may start a little later, never sooner)
        const admittedAt = elapsed();
        // What the ledger may at most hold against this call, were its rules right: what Nova counts
        // now, every claim not ended (created or not: a claim whose server a reading counts is held
        // twice until it ends 'counted'), and no place queued (checked only with none).
        const mostHeld = novaUsed + held.filter((c) => !c.ended).reduce((sum, c) => sum + c.cores, 0);
        const noPlaces = places.length === 0;
        let readNow = false;
        const reading = async () => {
          readNow = true;
          return read();
        };
        // (refute: Nova's quota check refuted the kept reading this holder knows: a new one is read, with
        // the servers created so far in it; the claims it counts may end 'counted' after it was sent)
        const refutedStamp = op.refute ? ledger.keptSeen() : undefined;
        const a = await ledger.acquire(
          { place: mine?.place, needs: { cores: op.cores, ramMiB: 1, instances: 1 }, ttlMs: op.lapses ? SHORT : LONG, joinIfShort: op.join, ...(op.staleShort ? { staleShortMs: LONG } : {}), ...(refutedStamp !== undefined ? { refutedStamp } : {}) },
          reading,
          undefined,
        );
        // "Short" on a kept reading, without a read (the double-count rule by admission order keeps a
        // late 'counted' claim subtracted only when admitted after the reading was stored): truly
        // short, never short by a server counted in the reading and subtracted again.
        if (!a.admitted && !readNow && noPlaces && !emptiedOnce) {
          expect(mostHeld + op.cores, `short without a read while ${QUOTA - mostHeld} cores fit (Nova counts ${novaUsed})`).toBeGreaterThan(QUOTA);
        }
        if (a.admitted) {
          if (mine) {
            places.splice(places.indexOf(mine), 1);
            await ledger.leave(mine.place);
          }
          held.push({ ledger, claim: a.claim, cores: op.cores, short: op.lapses, admittedAt: admittedAt, created: false, counted: false, ended: false, serverId: '' });
          const holds = novaUsed + uncreated();
          expect(holds, `admitted ${op.cores} cores past the quota: Nova counts ${novaUsed}, claims not created ${uncreated() - op.cores}`).toBeLessThanOrEqual(QUOTA);
        } else if (a.place !== undefined && !mine) {
          places.push({ ledger, place: a.place });
        }
        break;
      }
      case 'create': {
        const c = pick(op.i, (x) => !x.ended && !x.created);
        if (c) await create(c);
        break;
      }
      case 'counted': {
        const c = pick(op.i, (x) => !x.ended && x.created);
        if (c) await releaseCounted(c);
        break;
      }
      case 'notCreated': {
        const c = pick(op.i, (x) => !x.ended && !x.created);
        if (c) {
          c.ended = true;
          await c.ledger.release(c.claim, 'not-created');
        }
        break;
      }
      case 'delete': {
        // The guard's delete of a server it created (its claim released 'counted'): keptSeen right
        // before the DELETE, Nova's 204, then its 404: the deletion is published.
        const c = pick(op.i, (x) => x.counted && x.serverId !== '');
        if (c) {
          const ledger = holders[op.h]!;
          const keptSeq = c.ledger.keptSeen();
          novaUsed -= c.cores;
          const serverId = c.serverId;
          c.serverId = '';
          await c.ledger.publishFreed(serverId, op.credit && keptSeq !== undefined ? { claimId: c.claim.id, keptSeq } : undefined);
          void ledger;
        }
        break;
      }
      case 'leave': {
        const p = places[op.i % Math.max(1, places.length)];
        if (p) {
          places.splice(places.indexOf(p), 1);
          await p.ledger.leave(p.place);
        }
        break;
      }
      case 'pass':
        await store.pass(op.ms);
        manualMs += op.ms;
        break;
      case 'empty':
        // The store loses its state (Redis restarted empty); its holders write their claims back
        // (nothing is admitted while that settles), the settle maybe over at once.
        if (store.emptied === undefined) break;
        emptiedOnce = true;
        await store.emptied();
        places.length = 0;
        // The claims only admitted (none here is posting but those created) are gone with the store:
        // their renewal would answer false, and the guard creates nothing on them.
        for (const c of held) if (!c.ended && !c.created) c.ended = true;
        if (op.endSettle) await store.settle?.end();
        break;
    }
  }
}

describe.each(backends())('kept readings: $name ledger never admits past the quota', (backend) => {
  const run = backend.skip === undefined ? describe : describe.skip;
  run(backend.skip ?? 'on a real store', () => {
    beforeAll(() => backend.setUp());
    afterAll(() => backend.tearDown());
    it(`${RUNS} sequences`, { timeout: 600_000 }, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { minLength: 5, maxLength: 60 }), async (ops) => {
          const store = await backend.store();
          try {
            await play(store, ops);
          } finally {
            await store.close();
          }
        }),
        { numRuns: RUNS },
      );
    });
  });
});
