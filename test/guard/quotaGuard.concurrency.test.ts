/**
 * Contention in one process: 20 callers of one guard (in-flight claims: no 403 at all), and 20
 * callers spread over 4 guards (no shared claims: Nova's 403s happen and are absorbed). Every job
 * creates, works, and deletes with wait, as a CI worker does. On fake timers through FakeNova's
 * in-process adapter, with FakeNova's realistic DELETED window.
 */
import { describe, expect, it } from 'vitest';
import type { AxiosAdapter } from 'axios';
import type { NovaClient } from '../../src/nova/client.js';
import type { QuotaGuard } from '../../src/guard/quotaGuard.js';
import type { FakeNova } from '../../src/testing/index.js';
import { runUntil, settle, useFakeClock } from '../helpers.js';
import { body, clientFor, guardFor, liveServers, posts, startNova } from './fixtures.js';

useFakeClock();

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * An adapter that samples the fake's true cores in use after every answer. Usage only rises when
 * Nova accepts a POST, so the highest sample is the peak; `peak()` gives it.
 */
function watchPeak(nova: FakeNova): { adapter: AxiosAdapter; peak: () => number } {
  let peak = 0;
  const sample = (): void => {
    peak = Math.max(peak, nova.usage().cores);
  };
  const adapter: AxiosAdapter = (config) =>
    nova.adapter(config).finally(sample);
  return { adapter, peak: () => (sample(), peak) };
}

async function job(guard: QuotaGuard, client: NovaClient, name: string): Promise<number> {
  const s = await guard.createServer(body(name));
  await sleep(10); // the job's work
  await client.deleteServer(s.id, { wait: true, intervalMs: 3, timeoutMs: 5000, redeleteAfterMs: 0 });
  return guard.stats.attempts;
}

describe('20 concurrent callers', () => {
  it('one guard: in-flight claims keep them from passing the same check: 20 POSTs, 0 quota 403s, peak ≤ quota', async () => {
    const nova = await startNova({ maxTotalCores: 10, buildDelayMs: 10, deleteDelayMs: 10 });
    const watch = watchPeak(nova);
    const guard = guardFor(nova, { maxWaitMs: 20000, maxAttempts: 8, baseDelayMs: 5, maxDelayMs: 40 }, clientFor(nova, watch.adapter));
    const client = clientFor(nova);
    const results = await settle(Promise.allSettled(Array.from({ length: 20 }, (_, i) => job(guard, client, `job-${i}`))));
    const peak = watch.peak();
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
    expect(posts(nova).map((p) => p.status)).toEqual(Array(20).fill(202));
    expect(guard.stats).toMatchObject({ succeeded: 20, failed: 0, attempts: 20, quota403s: 0, quotaRetries: 0, cleanups: 0 });
    expect(guard.stats.waits).toBeGreaterThan(0);
    expect(peak).toBeLessThanOrEqual(10);
    expect(peak).toBeGreaterThanOrEqual(4);
    expect(guard.inFlightClaims).toBe(0);
    expect(liveServers(nova)).toEqual([]);
    expect(nova.usage()).toEqual({ cores: 0, instances: 0, ramMiB: 0, ram: 0 });
  });

  it('four guards × five callers: cross-guard races give 403s that are absorbed; every job done, nothing leaked', async () => {
    const nova = await startNova({ maxTotalCores: 10, buildDelayMs: 10, deleteDelayMs: 10 });
    const watch = watchPeak(nova);
    const guards = [0, 1, 2, 3].map(() => guardFor(nova, { maxWaitMs: 20000, maxAttempts: 30, baseDelayMs: 5, maxDelayMs: 40 }, clientFor(nova, watch.adapter)));
    const client = clientFor(nova);
    const results = await settle(Promise.allSettled(Array.from({ length: 20 }, (_, i) => job(guards[i % 4]!, client, `job-${i}`))));
    const peak = watch.peak();
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
    const statuses = posts(nova).map((p) => p.status);
    expect(statuses.filter((s) => s === 202)).toHaveLength(20);
    expect(statuses.filter((s) => s !== 202 && s !== 403)).toEqual([]);
    const total403 = statuses.filter((s) => s === 403).length;
    expect(guards.reduce((n, g) => n + g.stats.quota403s, 0)).toBe(total403);
    expect(guards.reduce((n, g) => n + g.stats.attempts, 0)).toBe(20 + total403);
    expect(guards.reduce((n, g) => n + g.stats.succeeded, 0)).toBe(20);
    expect(peak).toBeLessThanOrEqual(10);
    expect(liveServers(nova)).toEqual([]);
    expect(nova.usage()).toEqual({ cores: 0, instances: 0, ramMiB: 0, ram: 0 });
  });

  it('headroom() shows the claims of creates in flight', async () => {
    // Both builds stay `scheduling` (a claim ends once its server is past scheduling).
    const nova = await startNova({ maxTotalCores: 10, buildDelayMs: 100, schedulingDelayMs: 100 });
    const guard = guardFor(nova);
    const runs = [guard.createServer(body('a')), guard.createServer(body('b', '3'))];
    await runUntil(() => posts(nova).filter((p) => p.status === 202).length === 2, 1000);
    const h = await guard.headroom();
    // Both servers are build requests (`scheduling`): Nova does not count them yet; the claims do.
    expect(h.cores).toEqual({ max: 10, used: 0, inFlight: 6, headroom: 4 });
    expect(h.ram).toEqual({ max: 51200, used: 0, inFlight: 6144, headroom: 51200 - 6144 });
    expect(h.instances).toEqual({ max: 10, used: 0, inFlight: 2, headroom: 8 });
    await settle(Promise.all(runs));
    const after = await guard.headroom();
    expect(after.cores).toEqual({ max: 10, used: 6, inFlight: 0, headroom: 4 });
  });
});
