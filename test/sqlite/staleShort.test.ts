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
import { loadSqlite } from '../../src/sqlite/native.js';
import { COUNTED_RETENTION_MS } from '../../src/sqlite/store.js';
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
  function file(): { a: SqliteQuotaLedger; b: SqliteQuotaLedger; clock: ManualClock; path: string } {
    const dir = mkdtempSync(join(tmpdir(), 'nova-guard-stale-short-'));
    dirs.push(dir);
    const clock = new ManualClock();
    const open = (holder: string): SqliteQuotaLedger => {
      const l = new SqliteQuotaLedger({ path: join(dir, 'l.sqlite'), endpoint: ENDPOINT, projectId: 'stale', clock, holder, limitsMaxAgeMs: 200 });
      made.push(l);
      return l;
    };
    return { a: open('a'), b: open('b'), clock, path: join(dir, 'l.sqlite') };
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

  it("a file shared with an older nova-guard: a late 'counted' claim it admitted (no claim_admitted row), or any late claim on a reading it stored, may be in the kept reading: read again", async () => {
    for (const older of ['claim', 'reading'] as const) {
      const { a, b, path } = file();
      const nova = reader(() => ({ maxTotalCores: 4, totalCoresUsed: 0 }));
      const first = await a.acquire(ask(), nova.read, undefined);
      if (first.admitted) await a.release(first.claim, 'not-created');
      // b's create is admitted on the kept reading, after it was stored; Nova counts it: 'counted'
      const late = await b.acquire(ask(), nova.read, undefined);
      expect(late).toMatchObject({ admitted: true, reading: { shared: true } });
      if (late.admitted) await b.release(late.claim, 'counted');
      expect(nova.calls()).toBe(1);
      // what an older nova-guard leaves: no admission order for its claim, none for the reading it stored
      const db = new (loadSqlite())(path);
      if (older === 'claim') db.prepare('DELETE FROM claim_admitted').run();
      else db.prepare("UPDATE meta SET value = -1 WHERE key = 'limits_stored_for'").run();
      db.close();
      const three = await a.acquire(ask({ needs: { cores: 3, ramMiB: 0, instances: 1 } }), nova.read, undefined);
      expect(nova.calls(), older).toBe(2);
      expect(three.reading.shared).toBe(false);
    }
  });

  it("short only by a late 'counted' claim admitted after the kept reading was stored: answered on, no read (the file's claim_admitted row and the reading's stored order)", async () => {
    const { a, b, path, clock } = file();
    const nova = reader(() => ({ maxTotalCores: 4, totalCoresUsed: 0 }));
    const first = await a.acquire(ask(), nova.read, undefined);
    if (first.admitted) await a.release(first.claim, 'not-created');
    const late = await b.acquire(ask(), nova.read, undefined);
    if (late.admitted) await b.release(late.claim, 'counted');
    const three = await a.acquire(ask({ needs: { cores: 3, ramMiB: 0, instances: 1 } }), nova.read, undefined);
    expect(three).toMatchObject({ admitted: false, reading: { shared: true, requestId: 'req-1' }, inFlight: { cores: 2 } });
    expect(nova.calls()).toBe(1);
    const db = new (loadSqlite())(path, { fileMustExist: true });
    const meta = (k: string): number => Number((db.prepare('SELECT value FROM meta WHERE key = ?').get(k) as { value: unknown }).value);
    const admitted = db.prepare('SELECT id, ord FROM claim_admitted').all() as Array<{ id: string; ord: number }>;
    const storedFor = meta('limits_stored_for');
    const storedOrd = meta('limits_stored_ord');
    db.close();
    // the release kept the row; its order is at or after the reading's store, which is after its send
    expect(admitted).toEqual([{ id: late.admitted ? late.claim.id : '', ord: expect.any(Number) }]);
    expect(storedFor).toBe(first.reading.stamp);
    expect(storedOrd).toBeGreaterThan(first.reading.stamp);
    expect(admitted[0]!.ord).toBeGreaterThanOrEqual(storedOrd);
    // once the 'counted' record is dropped (its retention over), so is its row
    clock.advance(COUNTED_RETENTION_MS + 1);
    await a.acquire(ask(), nova.read, undefined);
    const after = new (loadSqlite())(path, { fileMustExist: true });
    expect(after.prepare('SELECT count(*) AS n FROM claim_admitted WHERE id = ?').get(late.admitted ? late.claim.id : '')).toEqual({ n: 0 });
    after.close();
  });
});
