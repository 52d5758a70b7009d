/**
 * The far-Redis wait (issue 29 item 8, issue 31's 300-host start burst): a guard's call that waits
 * for another holder's refresh of the kept `/limits` reading waits for that holder's Nova read and
 * its round trips. With Redis 200 ms away and Nova taking 1.5 s to answer `GET /limits`, such a wait
 * runs past `ledgerTimeoutMs` (2 s); counted as ledger time, it sent the waiter to the in-process
 * ledger, which read `/limits` itself (the field case: 125 fallbacks, a slowest create of 45.8 s;
 * a measured refresh time in the budget fixed it only after each ledger's first wait). The ledger
 * now awaits that wait through `waitForOthersRead` and the guard pauses the call's limit during it:
 * no fallback from the first wait on, and the waiters send no `GET /limits` of their own.
 * Real redis-server behind a latency proxy, FakeNova, real clock, generous bounds.
 */
import { describe, expect, it } from 'vitest';
import { startLatencyProxy } from '../../bench/latencyProxy.js';
import { QuotaGuard } from '../../src/guard/index.js';
import { RedisQuotaLedger } from '../../src/redis/index.js';
import { afterThisTest } from '../cleanup.js';
import { body, clientFor, startNova } from '../guard/fixtures.js';
import { haveRedis, skipReason, useRedisServer } from './support.js';

const RTT_MS = 200;
const LIMITS_READ_MS = 1500;
const GUARDS = 4;
const MAX_WAIT_MS = 30_000;
/** The kept reading is fresh this long: a round's waiters are admitted on the reading their refresher kept. */
const LIMITS_MAX_AGE_MS = 3000;

describe.skipIf(!haveRedis)(`a far Redis and a slow GET /limits${haveRedis ? '' : ` (${skipReason})`}`, () => {
  const server = useRedisServer();

  it("a call that waits for another holder's refresh is no ledger failure, from the first wait on: no fallback, one GET /limits a round", async () => {
    const proxy = await startLatencyProxy(server.port, RTT_MS);
    afterThisTest(() => proxy.close());
    const nova = await startNova({ maxTotalCores: 100, buildDelayMs: 0, deleteDelayMs: 0, deletedWindowMs: 0 });
    nova.inject({ method: 'GET', path: '/limits', delayMs: LIMITS_READ_MS, times: Number.POSITIVE_INFINITY });
    const hosts = Array.from({ length: GUARDS }, (_, i) => {
      const client = clientFor(nova);
      const ledger = new RedisQuotaLedger({ url: proxy.url, endpoint: nova.endpoint, projectId: nova.projectId, holder: `far${i}`, limitsMaxAgeMs: LIMITS_MAX_AGE_MS, commandTimeoutMs: 4000 });
      afterThisTest(() => ledger.close());
      const guard = new QuotaGuard(client, { ledger, minDelayMs: 20, baseDelayMs: 50, maxDelayMs: 400, maxWaitMs: MAX_WAIT_MS, activeIntervalMs: 20, activeTimeoutMs: MAX_WAIT_MS });
      afterThisTest(() => guard.close());
      return { client, ledger, guard };
    });
    const round = async (n: number): Promise<number[]> =>
      Promise.all(
        hosts.map(async (h, i) => {
          const t0 = performance.now();
          const s = await h.guard.createServer(body(`far-${n}-${i}`));
          const ms = performance.now() - t0;
          await h.client.deleteServer(s.id, { wait: true, intervalMs: 20, timeoutMs: 10_000 });
          return ms;
        }),
      );
    const fallbacks = (): number => hosts.reduce((s, h) => s + h.guard.stats.ledgerFallbacks, 0);
    const reads = (): number => nova.requestsTo('GET', /\/limits$/).length;
    const first = await round(1);
    const [firstFallbacks, firstReads] = [fallbacks(), reads()];
    // The kept reading goes stale (and the deletions made it stale already): the next round refreshes.
    await new Promise((r) => setTimeout(r, LIMITS_MAX_AGE_MS + 200));
    const second = await round(2);
    const [secondFallbacks, secondReads] = [fallbacks() - firstFallbacks, reads() - firstReads];
    console.log(`[farRefreshBudget] fallbacks ${firstFallbacks} then ${secondFallbacks}; GET /limits ${firstReads} then ${secondReads}; creates ${[...first, ...second].map(Math.round).join(', ')} ms`);
    expect([firstFallbacks, secondFallbacks]).toEqual([0, 0]);
    // One holder reads for the round; the others take its kept reading. A waiter that fell back (or
    // read for itself) would make it up to GUARDS. At most one more a round: a reading that went
    // stale between two holders' turns.
    expect(firstReads).toBeLessThanOrEqual(2);
    expect(secondReads).toBeLessThanOrEqual(2);
    for (const ms of [...first, ...second]) expect(ms).toBeLessThan(MAX_WAIT_MS);
  }, 40_000);
});
