/**
 * When a wait settles, nothing of it is left: no request reaches Nova afterwards (the last sleep and
 * the deadline used to race, so a poll started as the wait timed out) and no timer is pending. On
 * fake timers through FakeNova's adapter: every timer nova-guard starts is one vitest counts.
 */
import { describe, expect, it, vi } from 'vitest';
import { waitForDelete } from '../../src/index.js';
import { clientFor, settle, startNova, useFakeClock } from '../helpers.js';

useFakeClock();

const timeouts = (): number => vi.getTimerCount();

describe.each([true, false])('a wait that times out (coalesce: %s)', (coalesce) => {
  it('sends no request after it settled and leaves no timer, 10 times in a row', async () => {
    const nova = await startNova();
    const client = clientFor(nova, { coalesce });
    const late: string[] = [];
    for (let i = 0; i < 10; i++) {
      const id = nova.addServer().id;
      nova.setServerBehavior(id, { onDelete: 'never' });
      await client.requestDelete(id);
      const before = timeouts();
      const r = await settle(waitForDelete(client, id, { intervalMs: 5, timeoutMs: 60, jitter: 0 }));
      const settledAt = Date.now();
      expect(r.outcome).toBe('timeout');
      expect(r.elapsedMs).toBe(60);
      expect(timeouts()).toBeLessThanOrEqual(before);
      const count = nova.requests.length;
      await vi.advanceTimersByTimeAsync(60_000);
      late.push(...nova.requests.slice(count).map((q) => `${q.method} ${q.path} +${q.timeMs - settledAt} ms`));
      expect(timeouts()).toBeLessThanOrEqual(before);
    }
    expect(late).toEqual([]);
  });
});
