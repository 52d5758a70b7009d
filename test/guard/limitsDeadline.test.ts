/**
 * A `GET /limits` that hangs ends a guarded call by its deadline: reads of the wait for headroom are
 * cut when `maxWaitMs` runs out, and one that starts with less than `finalReadMs` left (the read at
 * the end of a wait, every read with `maxWaitMs: 0`) gets `finalReadMs` (5 s). The cut read's
 * request is aborted (its axios signal), the call rejects with `NovaNetworkError` (`timedOut`)
 * naming the deadline, and no timer is left. Before, the call settled at the client's
 * `requestTimeoutMs` per attempt (60 s with the default client: two attempts of 30 s), whatever
 * `maxWaitMs` said. Fake timers, FakeNova (`inject`: a hang), the in-process and a real SQLite ledger.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AxiosAdapter } from 'axios';
import { describe, expect, it, vi } from 'vitest';
import { NovaClient } from '../../src/nova/client.js';
import { NovaNetworkError, RateLimitError } from '../../src/errors/index.js';
import type { FakeNova } from '../../src/testing/index.js';
import { SqliteQuotaLedger } from '../../src/sqlite/index.js';
import { afterThisTest } from '../cleanup.js';
import { T0, fakeMs, settle, useFakeClock } from '../helpers.js';
import { body, guardFor, startNova } from './fixtures.js';
import type { QuotaGuardOptions } from '../../src/guard/quotaGuard.js';

useFakeClock();

/** A client as shipped (requestTimeoutMs 30 s, its default retries), whose requests' signals are kept. */
function recordingClient(nova: FakeNova): { client: NovaClient; signals: AbortSignal[] } {
  const signals: AbortSignal[] = [];
  const adapter: AxiosAdapter = (config) => {
    if (config.signal) signals.push(config.signal as AbortSignal);
    return nova.adapter(config);
  };
  return { client: new NovaClient({ endpoint: nova.endpoint, token: `admin:${nova.projectId}`, microversion: '2.79', adapter }), signals };
}

async function hungCreate(nova: FakeNova, options: QuotaGuardOptions): Promise<{ err: Error; atMs: number; signals: AbortSignal[] }> {
  const { client, signals } = recordingClient(nova);
  const guard = guardFor(nova, options, client);
  const t0 = fakeMs();
  const err = await settle(guard.createServer(body('x')).then(() => new Error('created'), (e: unknown) => e as Error));
  const atMs = fakeMs() - t0;
  await guard.close();
  return { err, atMs, signals };
}

describe('a GET /limits that hangs', () => {
  it.each([
    [0, undefined, 5000],
    [3000, undefined, 5000],
    [0, 1000, 1000],
    [3000, 1000, 3000],
    [8000, 1000, 8000],
  ])('maxWaitMs %s, finalReadMs %s: the call settles at %s ms (not 60 s), NovaNetworkError timedOut, the request aborted, no timer left, no POST', async (maxWaitMs, finalReadMs, expectedMs) => {
    const nova = await startNova({ maxTotalCores: 8 });
    nova.inject({ method: 'GET', path: '/limits', hang: true, times: Number.POSITIVE_INFINITY });
    const { err, atMs, signals } = await hungCreate(nova, { maxWaitMs, ...(finalReadMs === undefined ? {} : { finalReadMs }) });
    expect(err).toBeInstanceOf(NovaNetworkError);
    expect((err as NovaNetworkError).timedOut).toBe(true);
    expect(err.message).toBe(`GET /limits timed out at the guarded call's deadline (no answer within ${expectedMs} ms; maxWaitMs ${maxWaitMs} ms, finalReadMs ${finalReadMs ?? 5000} ms)`);
    expect(atMs).toBe(expectedMs);
    expect(nova.requestsTo('GET', '/limits')).toHaveLength(1);
    expect(signals.filter((s) => !s.aborted), 'every request of the call ended').toEqual([]);
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(0);
    expect(vi.getTimerCount(), 'no timer left').toBe(0);
  });

  it('the read at the end of a wait gets finalReadMs: short for the whole wait, then the last read hangs: settles at maxWaitMs + finalReadMs', async () => {
    const nova = await startNova({ maxTotalCores: 2 });
    nova.addServer({ flavorId: '2', status: 'ACTIVE' });
    const { client, signals } = recordingClient(nova);
    const guard = guardFor(nova, { maxWaitMs: 1000, finalReadMs: 2000, minDelayMs: 100, baseDelayMs: 100, maxDelayMs: 100, jitter: 0, explainShortfall: false }, client);
    const t0 = fakeMs();
    const p = guard.createServer(body('x')).then(() => new Error('created'), (e: unknown) => e as Error);
    // Every read answers until the wait is at its end; the read at maxWaitMs hangs.
    await vi.advanceTimersByTimeAsync(950);
    nova.inject({ method: 'GET', path: '/limits', hang: true, times: Number.POSITIVE_INFINITY });
    const err = await settle(p);
    expect(err).toBeInstanceOf(NovaNetworkError);
    expect(fakeMs() - t0).toBe(1000 + 2000);
    expect(signals.filter((s) => !s.aborted)).toEqual([]);
    await guard.close();
    expect(vi.getTimerCount()).toBe(0);
  });

  it("the check of the shortfall at the deadline (a listing) that hangs is cut by finalReadMs too: QuotaWaitTimeoutError at maxWaitMs + finalReadMs, not the listing's 30 s", async () => {
    const nova = await startNova({ maxTotalCores: 2 });
    nova.addServer({ flavorId: '2', status: 'ACTIVE' });
    const { client } = recordingClient(nova);
    // 4 waits (100, 200, 400, 300 ms): no check on a wait (every 5th), only the one at the deadline.
    const guard = guardFor(nova, { maxWaitMs: 1000, finalReadMs: 2000, minDelayMs: 100, baseDelayMs: 100, maxDelayMs: 1000, jitter: 0 }, client);
    nova.inject({ method: 'GET', path: '/servers/detail', hang: true, times: Number.POSITIVE_INFINITY });
    const t0 = fakeMs();
    const err = await settle(guard.createServer(body('x')).then(() => new Error('created'), (e: unknown) => e as Error));
    expect(err.name).toBe('QuotaWaitTimeoutError');
    expect(err.message).toMatch(/cores: maxTotalCores=2 totalCoresUsed=2 requested=2/);
    expect(fakeMs() - t0).toBe(1000 + 2000);
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(0);
    await guard.close();
  });

  it('a slow /limits that answers within the limit is waited for: 4 s with maxWaitMs 0 creates the server', async () => {
    const nova = await startNova({ maxTotalCores: 8 });
    nova.inject({ method: 'GET', path: '/limits', delayMs: 4000, times: 1 });
    const { client } = recordingClient(nova);
    const guard = guardFor(nova, { maxWaitMs: 0 }, client);
    const server = await settle(guard.createServer(body('x')));
    expect(nova.getServerState(server.id)?.status).toBe('ACTIVE');
    await guard.close();
  });

  it('through a SQLite ledger (real file): the same deadline, the request aborted, no claim left on the file', async () => {
    const nova = await startNova({ maxTotalCores: 8 });
    const dir = mkdtempSync(join(tmpdir(), 'nova-guard-limits-deadline-'));
    afterThisTest(() => rmSync(dir, { recursive: true, force: true }));
    const { client, signals } = recordingClient(nova);
    const ledger = new SqliteQuotaLedger({ endpoint: nova.endpoint, projectId: nova.projectId, path: dir, clock: client.clock });
    afterThisTest(() => ledger.close());
    nova.inject({ method: 'GET', path: '/limits', hang: true, times: Number.POSITIVE_INFINITY });
    const guard = guardFor(nova, { ledger, maxWaitMs: 2000, finalReadMs: 1000 }, client);
    const t0 = fakeMs();
    const err = await settle(guard.createServer(body('x')).then(() => new Error('created'), (e: unknown) => e as Error));
    expect(err).toBeInstanceOf(NovaNetworkError);
    expect(fakeMs() - t0).toBe(2000);
    expect(signals.filter((s) => !s.aborted)).toEqual([]);
    expect(guard.inFlightClaims).toBe(0);
    await guard.close();
  });
});

describe('a 429 on GET /limits whose Retry-After is longer than the client retries for', () => {
  const rateLimited = (nova: FakeNova, retryAfterS: number): void =>
    nova.inject({
      method: 'GET',
      path: '/limits',
      status: 429,
      headers: { 'Retry-After': String(retryAfterS) },
      body: { overLimit: { code: 429, message: 'This request was rate-limited.', retryAfter: String(retryAfterS) } },
      times: 1,
    });

  it('fits in what is left of maxWaitMs: the call waits it out, reads /limits once more exactly at the Retry-After, and creates the server (no attempt used)', async () => {
    const nova = await startNova({ maxTotalCores: 8 });
    rateLimited(nova, 120);
    const { client } = recordingClient(nova);
    const retries: string[] = [];
    const guard = guardFor(nova, { maxWaitMs: 300_000, onRetry: (i) => void retries.push(`${i.reason} ${i.delayMs}`) }, client);
    const t0 = fakeMs();
    const server = await settle(guard.createServer(body('x')));
    expect(nova.getServerState(server.id)?.status).toBe('ACTIVE');
    const reads = nova.requestsTo('GET', '/limits').map((r) => r.timeMs - T0 - t0);
    expect(reads).toEqual([0, 120_000]);
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(1);
    expect(retries).toEqual(['rate-limit 120000']);
    expect(guard.stats.rateLimitRetries).toBe(1);
    await guard.close();
  });

  it('longer than what is left of maxWaitMs: RateLimitError at once, saying the Retry-After and maxWaitMs; one read, no POST', async () => {
    const nova = await startNova({ maxTotalCores: 8 });
    rateLimited(nova, 400);
    const { client } = recordingClient(nova);
    const guard = guardFor(nova, { maxWaitMs: 300_000 }, client);
    const t0 = fakeMs();
    const err = await settle(guard.createServer(body('x')).then(() => new Error('created'), (e: unknown) => e as Error));
    expect(fakeMs() - t0).toBe(0);
    expect(err).toBeInstanceOf(RateLimitError);
    expect((err as RateLimitError).retryAfterMs).toBe(400_000);
    expect(err.message).toMatch(/^GET \S+\/limits was rate-limited with Retry-After 400000 ms, not shorter than what is left of maxWaitMs \(300000 of 300000 ms\): given up at once \(This request was rate-limited\.\)$/);
    expect(nova.requestsTo('GET', '/limits')).toHaveLength(1);
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(0);
    await guard.close();
    expect(vi.getTimerCount()).toBe(0);
  });
});
