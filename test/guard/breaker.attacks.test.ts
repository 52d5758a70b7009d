/**
 * Hostile-user attacks on QuotaGuard: wrong inputs refused before any request, an abort at once,
 * 120 concurrent creates on a small quota (never more cores held than the quota, every call
 * settled by its deadline, nothing left running), no secret in what the guard shows. Fake timers,
 * FakeNova's in-process adapter.
 */
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { AbortError, ValidationError } from '../../src/errors/index.js';
import { QuotaGuard } from '../../src/guard/quotaGuard.js';
import { fakeMs, settle, useFakeClock } from '../helpers.js';
import { body, clientFor, guardFor, liveServers, startNova } from './fixtures.js';

useFakeClock();

describe('bad input is refused before any request', () => {
  it.each([
    ['count without flavorRef', { cores: 1, ramMiB: 1, instances: 1, count: 3 }],
    ['cores beside flavorRef', { flavorRef: '1', cores: 4 }],
    ['ramMiB beside flavorRef', { flavorRef: '1', count: 2, ramMiB: 4 }],
  ])('withQuotaGuard needs: %s is a ValidationError (not silently ignored), 0 requests', async (_what, needs) => {
    const nova = await startNova();
    const guard = guardFor(nova);
    let ran = false;
    await expect(guard.withQuotaGuard(needs as never, async () => (ran = true))).rejects.toThrow(ValidationError);
    expect(ran).toBe(false);
    expect(nova.requests).toEqual([]);
  });

  it.each([Number.NaN, -1, '100', 2 ** 31, null])('maxWaitMs %s is refused at construction', async (v) => {
    const nova = await startNova();
    expect(() => new QuotaGuard(clientFor(nova), { maxWaitMs: v as never })).toThrow(ValidationError);
  });

  it('an options name misspelt is refused, naming it, with 0 requests: createServer, withQuotaGuard, headroom', async () => {
    const nova = await startNova();
    const guard = guardFor(nova);
    await expect(guard.createServer(body('x'), { keepOnAbrot: true } as never)).rejects.toThrow(/keepOnAbrot/);
    await expect(guard.withQuotaGuard({ cores: 1, ramMiB: 1, instances: 1 }, async () => 1, { sigal: undefined } as never)).rejects.toThrow(/sigal/);
    await expect(guard.headroom({ signl: undefined } as never)).rejects.toThrow(/signl/);
    expect(() => new QuotaGuard(clientFor(nova), { maxWaitMS: 5 } as never)).toThrow(/maxWaitMS/);
    expect(nova.requests).toEqual([]);
  });

  it('a signal already aborted: AbortError and 0 requests, for createServer, withQuotaGuard (numbers and flavor) and headroom', async () => {
    const nova = await startNova();
    const guard = guardFor(nova);
    const signal = AbortSignal.abort();
    await expect(guard.createServer(body('x'), { signal })).rejects.toThrow(AbortError);
    await expect(guard.withQuotaGuard({ cores: 1, ramMiB: 1, instances: 1 }, async () => 1, { signal })).rejects.toThrow(AbortError);
    await expect(guard.withQuotaGuard({ flavorRef: '1' }, async () => 1, { signal })).rejects.toThrow(AbortError);
    await expect(guard.headroom({ signal })).rejects.toThrow(AbortError);
    expect(nova.requests).toEqual([]);
  });
});

describe('load: 120 concurrent guarded creates on one guard, quota of 10 cores', () => {
  it('never more cores held than the quota; every call settled by its deadline; nothing running after close()', async () => {
    const nova = await startNova({ maxTotalCores: 10, buildDelayMs: 20, deleteDelayMs: 10 });
    const guard = guardFor(nova, { maxWaitMs: 4000, maxAttempts: 5 });
    const client = clientFor(nova);
    const startedAt = fakeMs();
    const settledAt: number[] = [];
    const job = async (i: number): Promise<string> => {
      try {
        const s = await guard.createServer(body(`load-${i}`, '2'));
        await new Promise((r) => setTimeout(r, 30));
        await client.deleteServer(s.id, { wait: true, intervalMs: 5, timeoutMs: 5000, redeleteAfterMs: 0 });
        return 'ok';
      } finally {
        settledAt.push(fakeMs());
      }
    };
    const results = await settle(Promise.allSettled(Array.from({ length: 120 }, (_, i) => job(i))));
    const ok = results.filter((r) => r.status === 'fulfilled').length;
    const failed = results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason?.name);
    expect(ok).toBeGreaterThan(0);
    expect(new Set(failed)).toEqual(new Set(failed.length ? ['QuotaWaitTimeoutError'] : []));
    expect(nova.quotaRecord().peakCores).toBeLessThanOrEqual(10);
    expect(nova.quotaRecord().quota403s).toBe(0);
    // A create that times out settles by maxWaitMs; a created one adds its wait for ACTIVE and its delete.
    const late = settledAt.filter((t) => t - startedAt > 4000 + 3000 + 5000);
    expect(late).toEqual([]);
    expect(guard.inFlightClaims).toBe(0);
    await guard.close();
    expect(liveServers(nova)).toEqual([]);
    expect(nova.pendingTimers()).toBe(0);
  }, 120_000);
});

describe('no secret shows', () => {
  it('the token is not in util.inspect of the guard, its options, its stats or a failed create', async () => {
    const nova = await startNova({ maxTotalCores: 1 });
    const guard = guardFor(nova, { maxWaitMs: 50 });
    const token = `admin:${nova.projectId}`;
    const err = await settle(guard.createServer(body('big', '2')).catch((e: unknown) => e));
    for (const shown of [inspect(guard, { depth: 8 }), inspect(guard.options, { depth: 8 }), inspect(guard.stats), inspect(err, { depth: 8 }), String(err)]) {
      expect(shown).not.toContain(token);
    }
  });
});
