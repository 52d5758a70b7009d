/**
 * A `GET /limits` slower than the Redis ledger's `limitsMaxAgeMs` (1 s here; the default is 10 s): a slow Nova.
 * Every reading was stale on arrival, so each holder that waited for another's refresh, its wait
 * over, took the refresh lock and read `/limits` itself, one after another: with 8 guards and a 3 s
 * read, 8 reads and the last create after about 24 s. The reading a holder waited for is now fresh
 * for it when it was fresh when the holder first asked (`src/ledger/freshWhenAsked.ts`): one read
 * for the burst. Real redis-server, FakeNova, real clock, generous bounds.
 */
import { describe, expect, it } from 'vitest';
import { QuotaGuard } from '../../src/guard/index.js';
import { RedisQuotaLedger } from '../../src/redis/index.js';
import { NovaNetworkError } from '../../src/errors/index.js';
import { afterThisTest } from '../cleanup.js';
import { body, clientFor, startNova } from '../guard/fixtures.js';
import type { FakeNova } from '../../src/testing/index.js';
import { haveRedis, skipReason, useRedisServer } from './support.js';

const LIMITS_READ_MS = 3000;
const GUARDS = 8;
/** The waiters' maxWaitMs: above the guard's finalReadMs (5 s), so their wait ends at it. */
const WAITER_MAX_WAIT_MS = 6000;

describe.skipIf(!haveRedis)(`RedisQuotaLedger under a GET /limits slower than limitsMaxAgeMs${haveRedis ? '' : ` (${skipReason})`}`, () => {
  const server = useRedisServer();

  it('one read for a burst of creates and headroom() reads, no fallback, every call within about one read', async () => {
    const nova = await startNova({ maxTotalCores: 100, buildDelayMs: 0 });
    nova.inject({ method: 'GET', path: '/limits', delayMs: LIMITS_READ_MS, times: Number.POSITIVE_INFINITY });
    const guards = Array.from({ length: GUARDS }, (_, i) => {
      const ledger = new RedisQuotaLedger({ url: server.url, endpoint: nova.endpoint, projectId: nova.projectId, holder: `slow${i}`, fleetWatcher: false, limitsMaxAgeMs: 1000 });
      afterThisTest(() => ledger.close());
      const guard = new QuotaGuard(clientFor(nova), { ledger, minDelayMs: 20, baseDelayMs: 50, maxDelayMs: 400, maxWaitMs: 30_000, activeIntervalMs: 20 });
      afterThisTest(() => guard.close());
      return guard;
    });
    // A new store is vetted first (a listing that makes every kept reading stale): before the burst.
    await guards[0]!.createServer(body('slow-read-first'));
    await new Promise((r) => setTimeout(r, 1500));
    const before = nova.requestsTo('GET', /\/limits$/).length;
    const t0 = performance.now();
    // Half create (acquire), half read the headroom (limits): both wait for the one refresh.
    const took = await Promise.all(
      guards.map(async (g, i) => {
        if (i % 2 === 0) await g.createServer(body(`slow-read-${i}`));
        else expect((await g.headroom()).cores.max).toBe(100);
        return performance.now() - t0;
      }),
    );
    const reads = nova.requestsTo('GET', /\/limits$/).length - before;
    console.log(`[slowNovaRead] GET /limits ${reads}; calls ${took.map(Math.round).join(', ')} ms`);
    expect(guards.map((g) => g.stats.ledgerFallbacks)).toEqual(guards.map(() => 0));
    expect(reads).toBe(1);
    expect(Math.max(...took)).toBeLessThan(2 * LIMITS_READ_MS);
  }, 60_000);

  // Before: each waiter, cut at its maxWaitMs, went to its in-process ledger and read /limits itself
  // (8 guards: 8 more reads at once for a Nova whose read already hung), only to give that claim back
  // and report "the quota ledger (redis) is out of reach", which it was not.
  it("waiters whose maxWaitMs runs out during another holder's hung read end as that read does: no read of their own, no fallback", async () => {
    const nova = await startNova({ maxTotalCores: 100, buildDelayMs: 0 });
    const mk = (i: number, maxWaitMs: number): QuotaGuard => {
      const ledger = new RedisQuotaLedger({ url: server.url, endpoint: nova.endpoint, projectId: nova.projectId, holder: `hung${i}`, fleetWatcher: false, limitsMaxAgeMs: 1000 });
      afterThisTest(() => ledger.close());
      const guard = new QuotaGuard(clientFor(nova), { ledger, minDelayMs: 20, baseDelayMs: 50, maxDelayMs: 400, maxWaitMs, activeIntervalMs: 20, onWarning: () => undefined });
      afterThisTest(() => guard.close());
      return guard;
    };
    const holder = mk(0, 30_000);
    const waiters = Array.from({ length: GUARDS - 1 }, (_, i) => mk(i + 1, WAITER_MAX_WAIT_MS));
    await holder.createServer(body('hung-first'));
    await new Promise((r) => setTimeout(r, 1500));
    // The holder's next read hangs (one stuck request: Nova answers the others).
    nova.inject({ method: 'GET', path: '/limits', hang: true, times: 1 });
    const before = nova.requestsTo('GET', /\/limits$/).length;
    const stop = new AbortController();
    const held = holder.createServer(body('hung-holder'), { signal: stop.signal }).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 200));
    const t0 = performance.now();
    const ends = await Promise.all(waiters.map((g, i) => g.createServer(body(`hung-${i}`)).then(() => 'created', (e: unknown) => e as Error).then((e) => ({ e, ms: performance.now() - t0 }))));
    const reads = nova.requestsTo('GET', /\/limits$/).length - before;
    stop.abort();
    await held;
    console.log(`[slowNovaRead] hung holder: GET /limits ${reads}; waiters ${ends.map((x) => `${x.e instanceof Error ? x.e.name : x.e} ${Math.round(x.ms)}`).join(', ')} ms`);
    for (const { e, ms } of ends) {
      expect(e).toBeInstanceOf(NovaNetworkError);
      expect(e).toMatchObject({ timedOut: true });
      expect(ms).toBeGreaterThanOrEqual(WAITER_MAX_WAIT_MS - 50);
      expect(ms).toBeLessThan(WAITER_MAX_WAIT_MS + 2000);
    }
    expect(reads).toBe(1);
    expect(waiters.map((g) => g.stats.ledgerFallbacks)).toEqual(waiters.map(() => 0));
  }, 60_000);

  /** Guards on one Redis: `maxWaitMs` each; the first warm (the store vetted, a create made) and its reading gone stale. */
  async function warmGuards(nova: FakeNova, n: number, maxWaitMs: number, tag: string): Promise<QuotaGuard[]> {
    const guards = Array.from({ length: n }, (_, i) => {
      const ledger = new RedisQuotaLedger({ url: server.url, endpoint: nova.endpoint, projectId: nova.projectId, holder: `${tag}${i}`, fleetWatcher: false, limitsMaxAgeMs: 1000 });
      afterThisTest(() => ledger.close());
      const guard = new QuotaGuard(clientFor(nova), { ledger, minDelayMs: 20, baseDelayMs: 50, maxDelayMs: 400, maxWaitMs, activeIntervalMs: 20, onWarning: () => undefined });
      afterThisTest(() => guard.close());
      return guard;
    });
    await guards[0]!.createServer(body(`${tag}-warm`));
    await new Promise((r) => setTimeout(r, 1500));
    return guards;
  }

  it("an abort during the wait for another holder's read settles at once with AbortError and leaves no claim", async () => {
    const nova = await startNova({ maxTotalCores: 100, buildDelayMs: 0 });
    const [holder, waiter] = await warmGuards(nova, 2, 30_000, 'abort');
    nova.inject({ method: 'GET', path: '/limits', delayMs: LIMITS_READ_MS, times: 1 });
    const held = holder!.createServer(body('abort-holder'));
    await new Promise((r) => setTimeout(r, 300));
    const stop = new AbortController();
    const waiting = waiter!.createServer(body('abort-waiter'), { signal: stop.signal }).then(() => undefined, (e: unknown) => e as Error);
    await new Promise((r) => setTimeout(r, 700));
    const t0 = performance.now();
    stop.abort();
    const e = await waiting;
    const settledMs = performance.now() - t0;
    expect(e?.name).toBe('AbortError');
    expect(settledMs).toBeLessThan(500);
    await held;
    await new Promise((r) => setTimeout(r, 300));
    // The holder's claim ended with its server counted; the waiter took none.
    expect((await holder!.headroom()).cores.inFlight).toBe(0);
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(2);
    expect(waiter!.stats.ledgerFallbacks).toBe(0);
  }, 30_000);

  it("a Redis that stops (SIGSTOP) during the wait for another holder's read: every call still settles by maxWaitMs, degraded mode engages", async () => {
    const nova = await startNova({ maxTotalCores: 100, buildDelayMs: 0 });
    const guards = await warmGuards(nova, 3, 8000, 'stop');
    nova.inject({ method: 'GET', path: '/limits', delayMs: 4000, times: 1 });
    const t0 = performance.now();
    const calls = [guards[0]!.createServer(body('stop-holder')).then(() => 'created', (e: unknown) => (e as Error).name)];
    await new Promise((r) => setTimeout(r, 300));
    calls.push(...guards.slice(1).map((g, i) => g.createServer(body(`stop-${i}`)).then(() => 'created', (e: unknown) => (e as Error).name)));
    await new Promise((r) => setTimeout(r, 700));
    server.pause();
    try {
      const ends = await Promise.all(calls.map((c) => c.then((r) => ({ r, ms: performance.now() - t0 }))));
      console.log(`[slowNovaRead] SIGSTOP: ${ends.map((x) => `${x.r} ${Math.round(x.ms)}`).join(', ')} ms; outages ${guards.map((g) => g.stats.ledgerOutages).join(', ')}`);
      for (const { ms } of ends) expect(ms).toBeLessThan(8000 + 300 + 3000);
      expect(guards.map((g) => g.stats.ledgerOutages).reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(1);
    } finally {
      server.resume();
    }
  }, 40_000);
});
