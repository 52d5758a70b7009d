/**
 * One AbortSignal shared by many guarded creates (a worker pool's shutdown signal). Each call follows
 * it through its own signal from the guard's fan-out (`src/core/signalFanOut.ts`): the shared signal
 * carries at most one listener of the guard while the calls run and none once they settle, so 50
 * calls print no `MaxListenersExceededWarning` (before, 11 calls printed "11 abort listeners added to
 * [AbortSignal]"); an abort of the shared signal still ends every call with an AbortError, no POST
 * after it, the servers created deleted, and nothing left running.
 */
import { getEventListeners } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { AbortError } from '../../src/index.js';
import { settle, useFakeClock } from '../helpers.js';
import { body, guardFor, liveServers, posts, startNova } from './fixtures.js';
import { captureListenerWarnings, nextTicks } from '../listenerWarnings.js';

useFakeClock();

const warnings = captureListenerWarnings();

const N = 50;

describe('50 guarded creates sharing one AbortSignal', () => {
  it('no MaxListenersExceededWarning, all 50 created, at most one listener of the guard while they run and none after', async () => {
    const nova = await startNova({ maxTotalCores: 1000, maxTotalInstances: 1000, maxTotalRAMSize: 10_000_000, buildDelayMs: 20 });
    const guard = guardFor(nova, { maxWaitMs: 60_000 });
    const shared = new AbortController();
    const calls = Array.from({ length: N }, (_, i) => guard.createServer(body(`s-${i}`), { signal: shared.signal }));
    // Sample while the calls are inside their waits, POSTs and waits for ACTIVE.
    let peak = 0;
    for (let i = 0; i < 30; i++) {
      peak = Math.max(peak, getEventListeners(shared.signal, 'abort').length);
      await settle(new Promise((r) => setTimeout(r, 1)));
    }
    const results = await settle(Promise.allSettled(calls));
    await nextTicks();
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
    expect(posts(nova).map((p) => p.status)).toEqual(Array(N).fill(202));
    expect(peak).toBeGreaterThanOrEqual(1);
    expect(peak).toBeLessThanOrEqual(1);
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
    expect(warnings()).toEqual([]);
    await settle(guard.close());
  });

  it('withQuotaGuard × 50 on one signal: no warning, no listener left', async () => {
    const nova = await startNova({ maxTotalCores: 1000, maxTotalInstances: 1000, maxTotalRAMSize: 10_000_000 });
    const guard = guardFor(nova, { maxWaitMs: 60_000 });
    const shared = new AbortController();
    const calls = Array.from({ length: N }, () =>
      guard.withQuotaGuard({ cores: 1, ramMiB: 512, instances: 1 }, async (signal) => {
        await new Promise((r) => setTimeout(r, 10));
        return signal.aborted;
      }, { signal: shared.signal }),
    );
    const results = await settle(Promise.all(calls));
    await nextTicks();
    expect(results).toEqual(Array(N).fill(false));
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
    expect(warnings()).toEqual([]);
    await settle(guard.close());
  });

  it('headroom() × 50 on one signal: no warning, no listener left', async () => {
    const nova = await startNova();
    nova.inject({ method: 'GET', path: '/limits', delayMs: 20, times: Number.POSITIVE_INFINITY });
    const guard = guardFor(nova);
    const shared = new AbortController();
    const reads = await settle(Promise.all(Array.from({ length: N }, () => guard.headroom({ signal: shared.signal }))));
    await nextTicks();
    expect(reads).toHaveLength(N);
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
    expect(warnings()).toEqual([]);
    await settle(guard.close());
  });

  it('aborting the shared signal mid-way ends every call with AbortError: no POST after it, the servers made deleted, nothing left running', async () => {
    // 20 fit at once (2 cores each): 20 calls wait for ACTIVE (their servers building), 30 wait for headroom.
    const nova = await startNova({ maxTotalCores: 40, maxTotalInstances: 1000, maxTotalRAMSize: 10_000_000, buildDelayMs: 600_000, deleteDelayMs: 10 });
    const guard = guardFor(nova, { maxWaitMs: 60_000 });
    const shared = new AbortController();
    const calls = Array.from({ length: N }, (_, i) => guard.createServer(body(`a-${i}`), { signal: shared.signal }).then(() => 'created', (e: unknown) => e));
    await settle(new Promise((r) => setTimeout(r, 200)));
    const postsAtAbort = posts(nova).length;
    expect(postsAtAbort).toBe(20);
    expect(getEventListeners(shared.signal, 'abort').length).toBeLessThanOrEqual(1);
    shared.abort(new Error('pool shutting down'));
    const results = await settle(Promise.all(calls));
    await nextTicks();
    for (const r of results) expect(r).toBeInstanceOf(AbortError);
    expect(posts(nova)).toHaveLength(postsAtAbort);
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
    expect(guard.inFlightClaims).toBe(0);
    await settle(guard.close());
    await settle(new Promise((r) => setTimeout(r, 100)));
    expect(liveServers(nova)).toEqual([]);
    // A second later only FakeNova's own timers are left (its DELETED windows).
    await settle(new Promise((r) => setTimeout(r, 1000)));
    expect(vi.getTimerCount()).toBe(nova.pendingTimers());
    expect(warnings()).toEqual([]);
  });
});
