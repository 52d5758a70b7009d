/**
 * A kept `/limits` reading a call waited for (another process held the refresh lock and read Nova)
 * is fresh for that call when it was fresh when the call first asked (`src/ledger/freshWhenAsked.ts`):
 * `limitsMaxAgeMs` counts from the call's first ask, not from the end of its wait. Before, a
 * `GET /limits` slower than `limitsMaxAgeMs` made every reading stale on arrival: each waiting
 * process, its wait over, took the lock and read Nova itself, one after another. A reading already
 * stale when the call asked stays stale. Real SQLite file, ledger objects standing for processes,
 * real clock, generous bounds.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteQuotaLedger } from '../../src/sqlite/index.js';
import type { LimitsReading } from '../../src/ledger/index.js';
import { afterThisTest } from '../cleanup.js';

const ENDPOINT = 'http://nova.example:8774/v2.1';
/** Longer than the ledgers' limitsMaxAgeMs: every reading is older than that when it arrives. */
const READ_MS = 1200;
const MAX_AGE_MS = 400;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A `/limits` read answering `cores` max after `ms`, counting its calls. */
function slowRead(cores: number, ms: number): { read: (s: AbortSignal | undefined) => Promise<LimitsReading>; calls: () => number } {
  let calls = 0;
  return {
    read: async () => {
      calls++;
      await sleep(ms);
      return { absolute: { maxTotalCores: cores, totalCoresUsed: 0 }, requestId: `req-${cores}` };
    },
    calls: () => calls,
  };
}

function ledgers(n: number): SqliteQuotaLedger[] {
  const dir = mkdtempSync(join(tmpdir(), 'nova-guard-awaited-'));
  afterThisTest(() => rmSync(dir, { recursive: true, force: true }));
  return Array.from({ length: n }, (_, i) => {
    const l = new SqliteQuotaLedger({ endpoint: ENDPOINT, projectId: 'p1', path: dir, holder: `h${i}`, limitsMaxAgeMs: MAX_AGE_MS, fleetWatcher: false });
    afterThisTest(() => l.close());
    return l;
  });
}

describe('SqliteQuotaLedger: the reading a call waited for', () => {
  it('is the waiting process\'s when it was fresh at the ask, though older than limitsMaxAgeMs on arrival: no read of its own (limits and acquire)', async () => {
    const [a, b, c] = ledgers(3);
    const refresher = slowRead(10, READ_MS);
    const waiterB = slowRead(99, 50);
    const waiterC = slowRead(99, 50);
    const first = a!.limits(refresher.read, undefined);
    await sleep(100);
    const t0 = performance.now();
    const [ra, rb, rc] = await Promise.all([
      first,
      b!.limits(waiterB.read, undefined),
      c!.acquire({ place: undefined, needs: { cores: 2, ramMiB: 0, instances: 1 }, ttlMs: 60_000, joinIfShort: false }, waiterC.read, undefined),
    ]);
    const waitedMs = performance.now() - t0;
    expect(refresher.calls()).toBe(1);
    expect([waiterB.calls(), waiterC.calls()]).toEqual([0, 0]);
    expect(rb).toMatchObject({ stamp: ra.stamp, shared: true, absolute: { maxTotalCores: 10 } });
    expect(rc).toMatchObject({ admitted: true, reading: { stamp: ra.stamp, shared: true } });
    // Older than limitsMaxAgeMs when handed out, and said so.
    expect(rb.ageMs).toBeGreaterThan(MAX_AGE_MS);
    // They waited for the refresher's read, not the ledgers' own bound (limitsLockMs + busyTimeoutMs: 12 s).
    expect(waitedMs).toBeLessThan(READ_MS + 3000);
  }, 20_000);

  it('is not the waiting process\'s when it was already stale at the ask: the waiter reads Nova itself once the lock is free', async () => {
    const [a, b] = ledgers(2);
    const refresher = slowRead(10, READ_MS);
    const waiter = slowRead(20, 50);
    const first = a!.limits(refresher.read, undefined);
    // The refresher's read was sent more than limitsMaxAgeMs before this ask.
    await sleep(MAX_AGE_MS + 300);
    const [ra, rb] = await Promise.all([first, b!.limits(waiter.read, undefined)]);
    expect(refresher.calls()).toBe(1);
    expect(waiter.calls()).toBe(1);
    expect(rb.stamp).toBeGreaterThan(ra.stamp);
    expect(rb.absolute.maxTotalCores).toBe(20);
  }, 20_000);
});
