/**
 * A failing Nova gets fewer requests, never more: when the shared listings fail (a 503 storm), the
 * GETs that stand in for them are probed one at a time (the most overdue server first); one per server
 * waited on at every widened interval multiplied the requests by the number of waits.
 */
import { describe, expect, it, vi } from 'vitest';
import { waitForDelete } from '../../src/index.js';
import { clientFor, fakeMs, startNova, useFakeClock } from '../helpers.js';

useFakeClock();

describe('a 503 storm under 30 delete waits', () => {
  it('gets fewer requests than the healthy Nova before it, and every wait still ends deleted after it', async () => {
    const nova = await startNova({ deleteDelayMs: 150_000 });
    const client = clientFor(nova, { maxRequestsPerSecond: 10 });
    const ids = Array.from({ length: 30 }, () => nova.addServer({ status: 'ACTIVE' }).id);
    const deletes = Promise.all(ids.map((id) => client.deleteServer(id)));
    await vi.advanceTimersByTimeAsync(5000);
    await deletes;
    const told = new Set<string>();
    const onFailure = (f: { serverId: string; kind: string; error: Error }): void => void (f.kind === 'look' && (f.error as { status?: number }).status === 503 && told.add(f.serverId));
    const waits = ids.map((id) => waitForDelete(client, id, { intervalMs: 5000, jitter: 0, timeoutMs: 600_000, pollRetries: 1000, onFailure }));
    await vi.advanceTimersByTimeAsync(30_000); // past the first looks
    const count = async (ms: number): Promise<number> => {
      const before = nova.requests.length;
      await vi.advanceTimersByTimeAsync(ms);
      return nova.requests.length - before;
    };
    const healthy = await count(60_000);
    nova.inject({ method: 'GET', path: /^\/servers/, status: 503, times: Number.POSITIVE_INFINITY });
    await vi.advanceTimersByTimeAsync(30_000); // the pace widens, the listings back off
    const storm = await count(60_000);
    // Before the fix: 82 requests in the storm's minute (a GET per server every 20 s), against 16 healthy.
    expect(storm).toBeLessThanOrEqual(healthy);
    expect(storm).toBeGreaterThan(0); // still looking
    // Every wait heard of the failure, also those whose GET the failed probe held back.
    expect(told.size).toBe(30);
    nova.clearFaults();
    const stormEndedAt = fakeMs();
    const ends = Promise.all(waits.map((w) => w.then((r) => ({ outcome: r.outcome, at: fakeMs() }))));
    await vi.advanceTimersByTimeAsync(120_000);
    for (const e of await ends) {
      expect(e.outcome).toBe('deleted');
      expect(e.at - stormEndedAt).toBeLessThan(60_000);
    }
  }, 60_000);
});
