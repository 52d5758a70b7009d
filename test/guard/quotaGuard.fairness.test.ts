// Fairness among one guard's waiters (found by the churn benchmark: a worker that freed cores took
// them again at once while others starved in backoff until QuotaWaitTimeoutError). On fake timers
// through FakeNova's in-process adapter.
import { describe, expect, it } from 'vitest';
import { QuotaGuard } from '../../src/guard/quotaGuard.js';
import { runUntil, settle, useFakeClock } from '../helpers.js';
import { FAST, body, clientFor, startNova } from './fixtures.js';

useFakeClock();

describe('QuotaGuard fairness', () => {
  it('FIFO: a call already waiting gets freed cores before a newcomer', async () => {
    const nova = await startNova({ maxTotalCores: 2 });
    const holder = nova.addServer({ status: 'ACTIVE', flavorId: '2' }).id;
    const guard = new QuotaGuard(clientFor(nova), { ...FAST, minDelayMs: 60, baseDelayMs: 60, maxDelayMs: 60, jitter: 0 });
    const a = guard.createServer(body('first-waiter'));
    await runUntil(() => guard.stats.waits > 0);
    nova.destroyServer(holder); // freed outside this client: no wake-up, 'first-waiter' sleeps on
    const b = guard.createServer(body('newcomer'));
    const sa = await settle(a);
    const accepted = nova.requestsTo('POST', '/servers').filter((r) => r.status === 202);
    expect(accepted).toHaveLength(1);
    expect(nova.getServerState(sa.id)?.name).toBe('first-waiter');
    // the newcomer is served once the first waiter's server is gone
    await settle(guard.client.deleteServer(sa.id, { wait: true, intervalMs: 2 }));
    const sb = await settle(b);
    expect(nova.getServerState(sb.id)?.name).toBe('newcomer');
  });

  it('a deletion confirmed by the same client wakes waiters at once, not after their backoff', async () => {
    const nova = await startNova({ maxTotalCores: 2, deleteDelayMs: 20 });
    const client = clientFor(nova);
    const holder = nova.addServer({ status: 'ACTIVE', flavorId: '2' }).id;
    const guard = new QuotaGuard(client, { ...FAST, minDelayMs: 10_000, baseDelayMs: 10_000, maxDelayMs: 10_000 });
    const t0 = performance.now();
    const created = guard.createServer(body('after-delete'));
    await runUntil(() => guard.stats.waits > 0);
    await settle(client.deleteServer(holder, { wait: true, intervalMs: 5 }));
    const s = await settle(created);
    expect(nova.getServerState(s.id)?.name).toBe('after-delete');
    expect(performance.now() - t0).toBeLessThan(3000);
    // Woken at the fake ms Nova answered 404 for the holder: its POST went out that same ms.
    const gone = nova.requestsTo('GET', `/servers/${holder}`).at(-1)!;
    expect(gone.status).toBe(404);
    expect(nova.requestsTo('POST', '/servers').map((r) => [r.status, r.timeMs])).toEqual([[202, gone.timeMs]]);
    expect(guard.stats.waits).toBe(1);
  });
});
