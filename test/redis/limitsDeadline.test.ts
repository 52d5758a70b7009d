/**
 * A `GET /limits` that hangs, read through a `RedisQuotaLedger` (its `acquire` calls the guard's
 * read under its refresh lock): the guarded call still settles by its deadline (`maxWaitMs`, at
 * least `finalReadMs` for a read at its end) with `NovaNetworkError` (`timedOut`), the request
 * aborted, and the refresh lock given back (a second holder reads at once). Real redis-server,
 * FakeNova (in-process adapter), real clock; generous bounds.
 */
import type { AxiosAdapter } from 'axios';
import { describe, expect, it } from 'vitest';
import { NovaNetworkError } from '../../src/errors/index.js';
import { NovaClient } from '../../src/nova/index.js';
import { RedisQuotaLedger } from '../../src/redis/index.js';
import { FakeNova } from '../../src/testing/index.js';
import { afterThisTest } from '../cleanup.js';
import { body, guardFor } from '../guard/fixtures.js';
import { haveRedis, skipReason, useRedisServer } from './support.js';

describe.skipIf(!haveRedis)(`a hung GET /limits through the Redis ledger${haveRedis ? '' : ` (${skipReason})`}`, () => {
  const server = useRedisServer();

  it('settles at about maxWaitMs (1 s, not the 60 s of two 30 s attempts) with NovaNetworkError timedOut; the request aborted; the lock given back', async () => {
    const nova = await FakeNova.start({ maxTotalCores: 8 });
    afterThisTest(() => nova.close());
    const signals: AbortSignal[] = [];
    const adapter: AxiosAdapter = (config) => {
      if (config.signal && String(config.url).endsWith('/limits')) signals.push(config.signal as AbortSignal);
      return nova.adapter(config);
    };
    // The client as shipped: requestTimeoutMs 30 s and its retries.
    const client = new NovaClient({ endpoint: nova.endpoint, token: `admin:${nova.projectId}`, microversion: '2.79', adapter });
    const ledger = new RedisQuotaLedger({ url: server.url, endpoint: nova.endpoint, projectId: nova.projectId, holder: 'hung' });
    afterThisTest(() => ledger.close());
    nova.inject({ method: 'GET', path: '/limits', hang: true, times: 1 });
    const guard = guardFor(nova, { ledger, maxWaitMs: 1000, finalReadMs: 1000 }, client);
    const t0 = Date.now();
    const err = await guard.createServer(body('x')).then(() => new Error('created'), (e: unknown) => e as Error);
    const tookMs = Date.now() - t0;
    expect(err).toBeInstanceOf(NovaNetworkError);
    expect((err as NovaNetworkError).timedOut).toBe(true);
    expect(tookMs).toBeGreaterThanOrEqual(900);
    expect(tookMs).toBeLessThan(8000);
    expect(signals.length).toBeGreaterThan(0);
    expect(signals.every((s) => s.aborted), 'the hung read was aborted').toBe(true);
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(0);
    // The refresh lock was given back: a second create reads /limits at once and is admitted.
    const t1 = Date.now();
    const created = await guard.createServer(body('y'));
    expect(created.id).toBeTruthy();
    expect(Date.now() - t1).toBeLessThan(5000);
    await guard.close();
  }, 60_000);
});
