/**
 * The SQLite ledger's `acquire` and its kept reading for a "still short" answer
 * (`AcquireRequest.staleShortMs`), as the Redis ledger's (test/redis/staleShort.test.ts): a kept
 * reading older than `limitsMaxAgeMs` but within `staleShortMs`, sent after the last confirmed
 * deletion, that leaves the needs short answers "not admitted" with no `/limits` read (and queues
 * the call in the same transaction); a reading that would admit, one a confirmed deletion came
 * after, and one older than `staleShortMs` are read afresh. A fresh kept reading is admitted on
 * without a read, by another process's ledger object too. Real SQLite file; a clock that moves only
 * when told.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AcquireRequest, LimitsReading } from '../../src/ledger/index.js';
import { SqliteQuotaLedger } from '../../src/sqlite/index.js';
import { ManualClock } from '../ledgers/backends.js';

const ENDPOINT = 'http://nova.example:8774/v2.1';
const two = { cores: 2, ramMiB: 0, instances: 1 };
const ask = (over: Partial<AcquireRequest> = {}): AcquireRequest => ({ place: undefined, needs: two, ttlMs: 60_000, joinIfShort: false, ...over });

/** A `/limits` read of `absolute()` that counts its calls. */
function reader(absolute: () => Record<string, number>): { read: (signal: AbortSignal | undefined) => Promise<LimitsReading>; calls: () => number } {
  let n = 0;
  return {
    read: async () => {
      n += 1;
      return { absolute: absolute(), requestId: `req-${n}` };
    },
    calls: () => n,
  };
}

describe('SqliteQuotaLedger.acquire: a kept reading that still says short', () => {
  const made: SqliteQuotaLedger[] = [];
  const dirs: string[] = [];
  afterEach(async () => {
    await Promise.all(made.splice(0).map((l) => l.close()));
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  /** Two ledger objects (two processes) on one new file, on one manual clock. */
  function file(): { a: SqliteQuotaLedger; b: SqliteQuotaLedger; clock: ManualClock } {
    const dir = mkdtempSync(join(tmpdir(), 'nova-guard-stale-short-'));
    dirs.push(dir);
    const clock = new ManualClock();
    const open = (holder: string): SqliteQuotaLedger => {
      const l = new SqliteQuotaLedger({ path: join(dir, 'l.sqlite'), endpoint: ENDPOINT, projectId: 'stale', clock, holder, limitsMaxAgeMs: 200 });
      made.push(l);
      return l;
    };
    return { a: open('a'), b: open('b'), clock };
  }

  it('a fresh kept reading is admitted on without a read, by the other process too: one GET /limits for both', async () => {
    const { a, b } = file();
    const nova = reader(() => ({ maxTotalCores: 4, totalCoresUsed: 0 }));
    const first = await a.acquire(ask(), nova.read, undefined);
    expect(first).toMatchObject({ admitted: true, reading: { shared: false, requestId: 'req-1' } });
    const second = await b.acquire(ask(), nova.read, undefined);
    expect(second).toMatchObject({ admitted: true, reading: { shared: true, requestId: 'req-1' }, inFlight: two });
    expect(nova.calls()).toBe(1);
    // the quota is taken: the third is refused on the same kept reading, and queued in the same transaction
    const third = await b.acquire(ask({ joinIfShort: true }), nova.read, undefined);
    expect(third).toMatchObject({ admitted: false, inFlight: { cores: 4 } });
    expect(third.place).toBeDefined();
    expect(nova.calls()).toBe(1);
  });

  it('short on a reading past limitsMaxAgeMs but within staleShortMs: no read, the reading shared with its age, the call queued; without staleShortMs: a read', async () => {
    const { a, clock } = file();
    const nova = reader(() => ({ maxTotalCores: 2, totalCoresUsed: 2 }));
    expect(await a.acquire(ask(), nova.read, undefined)).toMatchObject({ admitted: false });
    expect(nova.calls()).toBe(1);
    clock.advance(400);
    const short = await a.acquire(ask({ staleShortMs: 10_000, joinIfShort: true }), nova.read, undefined);
    expect(short).toMatchObject({ admitted: false, reading: { shared: true, requestId: 'req-1' } });
    expect(short.reading.ageMs).toBeGreaterThanOrEqual(400);
    expect(short.place).toBeDefined();
    expect(nova.calls()).toBe(1);
    expect(await a.acquire(ask({ place: short.place }), nova.read, undefined)).toMatchObject({ admitted: false, reading: { shared: false } });
    expect(nova.calls()).toBe(2);
  });

  it('a reading that would admit is never admitted on once past limitsMaxAgeMs: read afresh, and the fresh one decides', async () => {
    const { a, clock } = file();
    let used = 0;
    const nova = reader(() => ({ maxTotalCores: 2, totalCoresUsed: used }));
    const first = await a.acquire(ask(), nova.read, undefined);
    expect(first.admitted).toBe(true);
    if (first.admitted) await a.release(first.claim, 'not-created');
    // Meanwhile someone outside the ledger took the cores: only a fresh reading knows.
    used = 2;
    clock.advance(400);
    const again = await a.acquire(ask({ staleShortMs: 10_000 }), nova.read, undefined);
    expect(nova.calls()).toBe(2);
    expect(again).toMatchObject({ admitted: false, reading: { shared: false, requestId: 'req-2' } });
  });

  it('a deletion confirmed after the reading (in another process), or a reading older than staleShortMs, is read afresh', async () => {
    const { a, b, clock } = file();
    const nova = reader(() => ({ maxTotalCores: 2, totalCoresUsed: 2 }));
    await a.acquire(ask(), nova.read, undefined);
    clock.advance(400);
    await b.publishFreed('0b0e6f4a-3d7c-4d55-9d3e-2f6f1c9a7b11');
    await a.acquire(ask({ staleShortMs: 10_000 }), nova.read, undefined);
    expect(nova.calls()).toBe(2);
    clock.advance(700);
    await a.acquire(ask({ staleShortMs: 500 }), nova.read, undefined);
    expect(nova.calls()).toBe(3);
    // Within both: no read.
    clock.advance(300);
    await a.acquire(ask({ staleShortMs: 10_000 }), nova.read, undefined);
    expect(nova.calls()).toBe(3);
  });
});
