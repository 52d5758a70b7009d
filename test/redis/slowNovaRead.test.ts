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
import { afterThisTest } from '../cleanup.js';
import { body, clientFor, startNova } from '../guard/fixtures.js';
import { haveRedis, RedisServer, skipReason } from './support.js';

const LIMITS_READ_MS = 3000;
const GUARDS = 8;

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
});
