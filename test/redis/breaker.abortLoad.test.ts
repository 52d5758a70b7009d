/**
 * Hostile load on the Redis ledger behind a slow link (bench/latencyProxy.ts, 60 ms round trips):
 * 40 guarded creates at once, each aborted at a random moment, many of them while the ledger's
 * one-call admission is in flight. Nothing the aborted calls took may stay in Redis (a claim left
 * there holds the fleet's headroom for its lease, 2 min). Real redis-server, real clock: outcomes
 * with generous bounds.
 */
import { describe, expect, it } from 'vitest';
import { RedisQuotaLedger } from '../../src/redis/index.js';
import { QuotaGuard } from '../../src/guard/index.js';
import { startLatencyProxy } from '../../bench/latencyProxy.js';
import { afterThisTest } from '../cleanup.js';
import { FAST, body, clientFor, startNova } from '../guard/fixtures.js';
import { haveRedis, skipReason, useRedisServer } from './support.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!haveRedis)(`guard on a slow Redis ledger, aborts at random${haveRedis ? '' : ` (${skipReason})`}`, () => {
  const server = useRedisServer();

  it('40 creates aborted at random moments: every call settles, no claim left in Redis, the quota never passed', async () => {
    const nova = await startNova({ maxTotalCores: 40, buildDelayMs: 30, deleteDelayMs: 10 });
    const proxy = await startLatencyProxy(server.port, 60);
    afterThisTest(() => proxy.close());
    const ledger = new RedisQuotaLedger({ url: `redis://127.0.0.1:${proxy.port}`, endpoint: nova.endpoint, projectId: nova.projectId, holder: 'breaker' });
    afterThisTest(() => ledger.close());
    const client = clientFor(nova);
    const guard = new QuotaGuard(client, { ...FAST, ledger, maxWaitMs: 10_000, ledgerTimeoutMs: 5000 });
    let seed = 11;
    const rand = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const job = async (i: number): Promise<string> => {
      const a = new AbortController();
      setTimeout(() => a.abort(), Math.floor(rand() * 400));
      try {
        const s = await guard.createServer(body(`r-${i}`, '1'), { signal: a.signal });
        await client.deleteServer(s.id, { wait: true, intervalMs: 5, timeoutMs: 5000, redeleteAfterMs: 0 });
        return 'ok';
      } catch (e) {
        return (e as Error).name;
      }
    };
    const started = Date.now();
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => job(i)));
    expect(Date.now() - started).toBeLessThan(15_000);
    expect([...new Set(results)].filter((r) => !['ok', 'AbortError'].includes(r))).toEqual([]);
    expect(results.filter((r) => r === 'AbortError').length).toBeGreaterThan(10);
    expect(nova.quotaRecord().peakCores).toBeLessThanOrEqual(40);
    // the late answers come back through the slow link and are undone in the background
    for (let i = 0; i < 50 && (await ledger.liveClaimIds()).length > 0; i++) await sleep(100);
    expect(await ledger.liveClaimIds()).toEqual([]);
    expect(guard.inFlightClaims).toBe(0);
    await guard.close();
  }, 60_000);
});
