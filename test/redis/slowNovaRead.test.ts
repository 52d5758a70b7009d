/**
 * A `GET /limits` slower than the Redis ledger's `limitsMaxAgeMs` (its default, 1 s): a slow Nova.
 * Every reading was stale on arrival, so each holder that waited for another's refresh, its wait
 * over, took the refresh lock and read `/limits` itself, one after another: with 8 guards and a 3 s
 * read, 8 reads and the last create after about 24 s. The reading a holder waited for is now fresh
 * for it when it was fresh when the holder first asked (`src/ledger/freshWhenAsked.ts`): one read
 * for the burst. Real redis-server, FakeNova, real clock, generous bounds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QuotaGuard } from '../../src/guard/index.js';
import { RedisQuotaLedger } from '../../src/redis/index.js';
import { NovaNetworkError } from '../../src/errors/index.js';
import { afterThisTest } from '../cleanup.js';
import { body, clientFor, startNova } from '../guard/fixtures.js';
import { haveRedis, RedisServer, skipReason } from './support.js';

const LIMITS_READ_MS = 3000;
const GUARDS = 8;
/** The waiters' maxWaitMs: above the guard's finalReadMs (5 s), so their wait ends at it. */
const WAITER_MAX_WAIT_MS = 6000;

describe.skipIf(!haveRedis)(`RedisQuotaLedger under a GET /limits slower than limitsMaxAgeMs${haveRedis ? '' : ` (${skipReason})`}`, () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await server?.kill();
  });

  it('one read for a burst of creates and headroom() reads, no fallback, every call within about one read', async () => {
    const nova = await startNova({ maxTotalCores: 100, buildDelayMs: 0 });
    nova.inject({ method: 'GET', path: '/limits', delayMs: LIMITS_READ_MS, times: Number.POSITIVE_INFINITY });
    const guards = Array.from({ length: GUARDS }, (_, i) => {
      const ledger = new RedisQuotaLedger({ url: server.url, endpoint: nova.endpoint, projectId: nova.projectId, holder: `slow${i}`, fleetWatcher: false });
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
      const ledger = new RedisQuotaLedger({ url: server.url, endpoint: nova.endpoint, projectId: nova.projectId, holder: `hung${i}`, fleetWatcher: false });
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
});
