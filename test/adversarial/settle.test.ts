/**
 * When a wait settles, nothing of it is left: no request reaches Nova afterwards (the last sleep and
 * the deadline used to race, so a poll started as the wait timed out) and no timer is pending.
 */
import { describe, expect, it } from 'vitest';
import { waitForDelete } from '../../src/index.js';
import { clientFor, startNova } from '../helpers.js';

const timeouts = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

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
      const r = await waitForDelete(client, id, { intervalMs: 5, timeoutMs: 60, jitter: 0 });
      const settledAt = Date.now();
      expect(r.outcome).toBe('timeout');
      expect(r.elapsedMs).toBeGreaterThanOrEqual(58);
      const count = nova.requests.length;
      await new Promise((res) => setTimeout(res, 15));
      late.push(...nova.requests.slice(count).map((q) => `${q.method} ${q.path} +${q.timeMs - settledAt} ms`));
      expect(timeouts()).toBeLessThanOrEqual(before);
    }
    expect(late).toEqual([]);
  });
});
