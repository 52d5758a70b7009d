/**
 * The waits a shared tick answers share its one jitter draw (src/delete/engine.ts, `#nextLookAt`).
 * Each drawn on its own, the next tick came at the earliest of 40 due times: about 0.9 of the
 * interval with the default jitter of 0.1, so 10 % more listings than one wait's schedule (seen on a
 * real Nova beside CPU hogs: 40 deletes sent as many looks as osc-lib's loop on the same timeline).
 */
import { expect, it, vi } from 'vitest';
import { clientFor, startNova, T0, useFakeClock } from '../helpers.js';

useFakeClock();

it('40 deletes waited on every 500 ms with the default jitter: listings about every 500 ms, not every 450', async () => {
  const nova = await startNova({ deleteDelayMs: 20_000, deletedWindowMs: 12_000 });
  const client = clientFor(nova, { maxRequestsPerSecond: Infinity });
  const ids = Array.from({ length: 40 }, () => nova.addServer({ status: 'ACTIVE' }).id);
  const done = client.deleteServers(ids, { wait: true, intervalMs: 500, timeoutMs: 120_000 });
  await vi.advanceTimersByTimeAsync(40_000);
  const r = await done;
  expect(r.failed).toEqual([]);
  const listings = nova.requests.filter((q) => q.method === 'GET' && (q.path === '/servers' || q.path === '/servers/detail')).map((q) => q.timeMs - T0);
  // Every server is deleted after 20 s: the listings before it are the waits' own schedule.
  const before = listings.filter((t) => t < 19_500);
  const meanGapMs = (before.at(-1)! - before[0]!) / (before.length - 1);
  expect(before.length).toBeGreaterThan(30);
  // The mean of the shared draws is the interval (the earliest of 40 draws was about 452 ms).
  expect(meanGapMs).toBeGreaterThanOrEqual(480);
  expect(meanGapMs).toBeLessThanOrEqual(520);
});
