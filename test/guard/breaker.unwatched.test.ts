/**
 * `waitForActive: false`: the claim of a server nobody watches ends at the guard's next reading
 * that shows the server past scheduling (Nova counts it from then on), as with `waitForActive`,
 * not when it leaves BUILD: otherwise each building server is subtracted twice (Nova's usage and
 * the claim) for its whole build, and creates wait for quota that is there. Fake timers, FakeNova.
 */
import { describe, expect, it, vi } from 'vitest';
import { settle, useFakeClock } from '../helpers.js';
import { body, guardFor, posts, startNova } from './fixtures.js';

useFakeClock();

describe('waitForActive: false, long builds', () => {
  it('4 one-core creates on a 4-core quota all go at once while the first ones still build (no wait, 4 POSTs)', async () => {
    const nova = await startNova({ maxTotalCores: 4, buildDelayMs: 60_000, schedulingDelayMs: 10 });
    const guard = guardFor(nova, { waitForActive: false, maxWaitMs: 2000 });
    const statuses: string[] = [];
    for (let i = 0; i < 4; i++) {
      await settle(new Promise((r) => setTimeout(r, 50))); // each scheduled before the next create
      statuses.push(await settle(guard.createServer(body(`u${i}`, '1')).then((s) => s.status ?? 'BUILD', (e: Error) => e.name)));
    }
    expect(statuses).toEqual(['BUILD', 'BUILD', 'BUILD', 'BUILD']);
    expect(posts(nova)).toHaveLength(4);
    expect(guard.stats.waits).toBe(0);
    expect(nova.quotaRecord().peakCores).toBe(4);
    await guard.close();
  });
});

describe('waitForActive: false, many calls waiting on unwatched claims', () => {
  it('20 calls waiting 2 s on 4 unwatched claims: each server looked at about once per activeIntervalMs, not once per admission of every call', async () => {
    const nova = await startNova({ maxTotalCores: 4, buildDelayMs: 5000, schedulingDelayMs: 5000 });
    const guard = guardFor(nova, { waitForActive: false, maxWaitMs: 2000, activeIntervalMs: 100 });
    for (let i = 0; i < 4; i++) await settle(guard.createServer(body(`u${i}`, '1')));
    nova.clearRequests();
    const results = await settle(Promise.all(Array.from({ length: 20 }, (_, i) => guard.createServer(body(`w${i}`, '1')).then(() => 'ok', (e: Error) => e.name))));
    expect(results).toEqual(Array(20).fill('QuotaWaitTimeoutError'));
    const looks = nova.requests.filter((q) => q.method === 'GET' && /^\/servers\/[^/]+$/.test(q.path)).length;
    // 4 servers × (2000 ms / 100 ms + the first): was one per admission of each call (2,318 here)
    expect(looks).toBeLessThanOrEqual(4 * 22);
    expect(nova.requestsTo('GET', '/limits').length).toBeGreaterThan(100);
    await guard.close();
  });

  it('a caller aborted while the shared look is in flight rejects at once; the look still ends the claim for the others', async () => {
    const nova = await startNova({ maxTotalCores: 2, buildDelayMs: 5000, schedulingDelayMs: 200 });
    const guard = guardFor(nova, { waitForActive: false, maxWaitMs: 3000, activeIntervalMs: 50 });
    await settle(guard.createServer(body('u0', '2')));
    nova.inject({ method: 'GET', path: /^\/servers\/[^/]+$/, delayMs: 300, times: 1 });
    const a = new AbortController();
    const started = Date.now();
    const aborted = guard.createServer(body('a', '2'), { signal: a.signal }).then(() => 'ok', (e: Error) => `${e.name} after ${Date.now() - started} ms`);
    const headroom = guard.headroom();
    setTimeout(() => a.abort(), 20);
    expect(await settle(aborted)).toBe('AbortError after 20 ms');
    // the look (answered at 300 ms, past scheduling) ended the claim: the server is counted once
    expect((await settle(headroom)).cores).toEqual({ max: 2, used: 2, inFlight: 0, headroom: 0 });
    expect(guard.inFlightClaims).toBe(0);
    expect(nova.requests.filter((q) => q.method === 'GET' && /^\/servers\/[^/]+$/.test(q.path))).toHaveLength(1);
    await guard.close();
  });
});

describe('close() while a shared look is in flight', () => {
  it('the look (a GET that hangs) ends with close(): no request of the guard left running', async () => {
    const nova = await startNova({ maxTotalCores: 2, buildDelayMs: 5000, schedulingDelayMs: 5000 });
    const guard = guardFor(nova, { waitForActive: false, maxWaitMs: 60_000, activeIntervalMs: 50 });
    await settle(guard.createServer(body('u0', '2')));
    nova.inject({ method: 'GET', path: /^\/servers\/[^/]+$/, hang: true, times: 1 });
    const waiting = guard.createServer(body('w', '2')).then(() => 'ok', (e: Error) => e.name);
    await settle(new Promise((r) => setTimeout(r, 20)));
    const closedAt = Date.now();
    await settle(guard.close());
    expect(await settle(waiting)).toBe('AbortError');
    await settle(new Promise((r) => setTimeout(r, 10)));
    expect(Date.now() - closedAt).toBeLessThan(1000);
    // the client's request timer of the hung GET is gone with it: only FakeNova's own timers remain
    expect(vi.getTimerCount()).toBe(nova.pendingTimers());
  });
});
