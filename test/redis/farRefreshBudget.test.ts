/**
 * The far-Redis budget (issue 29 item 8): a guard's call that waits for another holder's refresh of
 * the kept `/limits` reading waits for that holder's Nova read and its round trips, which the budget
 * of 4 RTOs of the command round trips did not cover: with Redis 200 ms away and Nova taking 1.5 s
 * to answer `GET /limits`, every such wait ran past `ledgerTimeoutMs` (2 s) and fell back to the
 * in-process ledger (the field case: 125 fallbacks, a slowest create of 45.8 s). The ledger now
 * measures the refreshes it sees (its own, its waits for another's) and adds their RTO to
 * `callBudgetMs`. Real redis-server behind a latency proxy, FakeNova, real clock, generous bounds.
 *
 * The arithmetic, for a waiter: its acquire (1 RTT, 200 ms) answers "another holder refreshes"; that
 * holder's read takes 1500 ms, its storeAdmit 1 RTT, the message half of one, then the waiter's next
 * acquire 1 RTT: about 2200 ms, past the 2000 ms budget of before. Measured refreshes of about
 * 1700-2300 ms put the budget at 4 RTO (~900 ms) + the refresh RTO: about 3000 ms and more. The
 * first round has no refresh measured yet (every ledger is new) and may fall back as before; the
 * second round, on a reading gone stale, must not.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLatencyProxy } from '../../bench/latencyProxy.js';
import { QuotaGuard } from '../../src/guard/index.js';
import { RedisQuotaLedger } from '../../src/redis/index.js';
import { afterThisTest } from '../cleanup.js';
import { body, clientFor, startNova } from '../guard/fixtures.js';
import { haveRedis, RedisServer, skipReason } from './support.js';

const RTT_MS = 200;
const LIMITS_READ_MS = 1500;
const GUARDS = 4;
const MAX_WAIT_MS = 30_000;
/** The kept reading is fresh this long: a round's waiters are admitted on the reading their refresher kept. */
const LIMITS_MAX_AGE_MS = 3000;

describe.skipIf(!haveRedis)(`a far Redis and a slow GET /limits${haveRedis ? '' : ` (${skipReason})`}`, () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await server?.kill();
  });

  it("a call that waits for another holder's refresh fits the measured budget: no fallback once a refresh was measured, every create within maxWaitMs", async () => {
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
    const first = await round(1);
    const firstFallbacks = fallbacks();
    // The kept reading goes stale (and the deletions made it stale already): the next round refreshes.
    await new Promise((r) => setTimeout(r, LIMITS_MAX_AGE_MS + 200));
    const second = await round(2);
    const secondFallbacks = fallbacks() - firstFallbacks;
    const budgets = hosts.map((h) => h.ledger.callBudgetMs());
    console.log(`[farRefreshBudget] fallbacks ${firstFallbacks} then ${secondFallbacks}; creates ${[...first, ...second].map(Math.round).join(', ')} ms; budgets ${budgets.join(', ')} ms`);
    expect(secondFallbacks).toBe(0);
    for (const ms of [...first, ...second]) expect(ms).toBeLessThan(MAX_WAIT_MS);
    // The budget covers a waiter's wait: 4 RTT + Nova's read at least.
    for (const b of budgets) expect(b).toBeGreaterThan(LIMITS_READ_MS + 4 * RTT_MS);
  }, 40_000);
});
