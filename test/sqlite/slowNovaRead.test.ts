/**
 * A slow `GET /limits` and the SQLite ledger (issue 31's start burst, on one host): the processes
 * that wait for another process's refresh of the kept reading wait for that process's Nova read.
 * Counted as ledger time, a read over `ledgerTimeoutMs` sent every waiter to its in-process ledger,
 * which read `/limits` itself: a slow Nova got more reads. The ledger now awaits that wait through
 * `waitForOthersRead` and the guard pauses the call's limit during it. Several ledger objects on one
 * real file stand for the processes of one host; FakeNova; real clock, generous bounds.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { QuotaGuard, type QuotaGuardOptions } from '../../src/guard/index.js';
import { SqliteQuotaLedger, type SqliteQuotaLedgerOptions } from '../../src/sqlite/index.js';
import type { FakeNova } from '../../src/testing/index.js';
import { afterThisTest } from '../cleanup.js';
import { body, clientFor, startNova } from '../guard/fixtures.js';

/** Longer than the guard's default `ledgerTimeoutMs` (2000 ms). */
const LIMITS_READ_MS = 3000;
const PROCESSES = 4;

/** Guard options of the creates (scaled to milliseconds). */
const CREATE = { minDelayMs: 20, baseDelayMs: 50, maxDelayMs: 400, maxWaitMs: 30_000, activeIntervalMs: 20 } as const;

/**
 * `count` guards, each on its own ledger object on one real SQLite file in a fresh directory (the
 * processes of one host), over one FakeNova whose `GET /limits` answers after `LIMITS_READ_MS`.
 */
async function slowFleet(count: number, ledgerOptions: Partial<SqliteQuotaLedgerOptions>, guardOptions: QuotaGuardOptions): Promise<{ nova: FakeNova; guards: QuotaGuard[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'nova-guard-slow-read-'));
  afterThisTest(() => rmSync(dir, { recursive: true, force: true }));
  const nova = await startNova({ maxTotalCores: 100, buildDelayMs: 0 });
  nova.inject({ method: 'GET', path: '/limits', delayMs: LIMITS_READ_MS, times: Number.POSITIVE_INFINITY });
  const guards = Array.from({ length: count }, (_, i) => {
    const ledger = new SqliteQuotaLedger({ path: dir, endpoint: nova.endpoint, projectId: nova.projectId, holder: `p${i}`, fleetWatcher: false, ...ledgerOptions });
    afterThisTest(() => ledger.close());
    const guard = new QuotaGuard(clientFor(nova), { ledger, ...guardOptions });
    afterThisTest(() => guard.close());
    return guard;
  });
  return { nova, guards };
}

describe('SqliteQuotaLedger under a GET /limits slower than ledgerTimeoutMs', () => {
  it("the processes that wait for another's read neither fall back nor read /limits themselves", async () => {
    const { nova, guards } = await slowFleet(PROCESSES, { limitsMaxAgeMs: 30_000 }, CREATE);
    const servers = await Promise.all(guards.map((g, i) => g.createServer(body(`slow-read-${i}`))));
    expect(new Set(servers.map((s) => s.id)).size).toBe(PROCESSES);
    expect(guards.map((g) => g.stats.ledgerFallbacks)).toEqual(guards.map(() => 0));
    // One process reads; the others take the reading it keeps (a waiter that fell back would read too).
    expect(nova.requestsTo('GET', /\/limits$/).length).toBe(1);
  }, 40_000);
});

describe('SqliteQuotaLedger under a GET /limits slower than limitsMaxAgeMs (its default, 1 s)', () => {
  // Before: every reading was stale on arrival (older than limitsMaxAgeMs), so each waiting
  // process, its wait over, took the refresh lock and read /limits itself, one after another: one
  // read per process, the last create after all of them (or after limitsLockMs + busyTimeoutMs,
  // 12 s, on a stale reading). The reading a process waited for is now fresh for it when it was
  // fresh when the process asked (src/ledger/freshWhenAsked.ts).
  it('one read for the burst, every create within about one read', async () => {
    const { nova, guards } = await slowFleet(PROCESSES + 2, {}, CREATE);
    const t0 = performance.now();
    const took = await Promise.all(guards.map(async (g, i) => (await g.createServer(body(`default-age-${i}`)), performance.now() - t0)));
    expect(guards.map((g) => g.stats.ledgerFallbacks)).toEqual(guards.map(() => 0));
    expect(nova.requestsTo('GET', /\/limits$/).length).toBe(1);
    // A second read in turn would put the slowest create past two reads.
    expect(Math.max(...took)).toBeLessThan(2 * LIMITS_READ_MS);
  }, 40_000);
});

describe('SqliteQuotaLedger: headroom() (no deadline) while another process reads a slow GET /limits', () => {
  // Before: the pause of a call without a deadline armed a timer of Infinity ms (run after 1 ms by
  // Node): the waiting process fell back at once and read /limits itself, a second read.
  it("waits for the other process's read: no fallback, one read for both", async () => {
    const { nova, guards } = await slowFleet(2, { limitsMaxAgeMs: 30_000 }, {});
    const first = guards[0]!.headroom();
    // The first process holds the refresh lock and waits for Nova.
    await new Promise((r) => setTimeout(r, 300));
    const rooms = await Promise.all([first, guards[1]!.headroom()]);
    expect(rooms.map((r) => r.cores.headroom)).toEqual([100, 100]);
    expect(guards.map((g) => g.stats.ledgerFallbacks)).toEqual([0, 0]);
    expect(nova.requestsTo('GET', /\/limits$/).length).toBe(1);
  }, 40_000);
});
