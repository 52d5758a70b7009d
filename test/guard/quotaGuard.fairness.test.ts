// Fairness among one guard's waiters (found by the churn benchmark: a worker that freed cores took
// them again at once while others starved in backoff until QuotaWaitTimeoutError).
import { describe, expect, it } from 'vitest';
import { QuotaGuard } from '../../src/guard/quotaGuard.js';
import { FAST, body, clientFor, startNova } from './fixtures.js';

describe('QuotaGuard fairness', () => {
  it('FIFO: a call already waiting gets freed cores before a newcomer', async () => {
    const nova = await startNova({ maxTotalCores: 2 });
    const holder = nova.addServer({ status: 'ACTIVE', flavorId: '2' }).id;
    const guard = new QuotaGuard(clientFor(nova), { ...FAST, minDelayMs: 60, baseDelayMs: 60, maxDelayMs: 60, jitter: 0 });
    const a = guard.createServer(body('first-waiter'));
    while (guard.stats.waits === 0) await new Promise((r) => setTimeout(r, 2));
    nova.destroyServer(holder); // freed outside this client: no wake-up, 'first-waiter' sleeps on
    const b = guard.createServer(body('newcomer'));
    const sa = await a;
    const accepted = nova.requestsTo('POST', '/servers').filter((r) => r.status === 202);
    expect(accepted).toHaveLength(1);
    expect(nova.getServerState(sa.id)?.name).toBe('first-waiter');
    // the newcomer is served once the first waiter's server is gone
    await guard.client.deleteServer(sa.id, { wait: true, intervalMs: 2 });
    const sb = await b;
    expect(nova.getServerState(sb.id)?.name).toBe('newcomer');
  });

  it('a deletion confirmed by the same client wakes waiters at once, not after their backoff', async () => {
    const nova = await startNova({ maxTotalCores: 2, deleteDelayMs: 20 });
    const client = clientFor(nova);
    const holder = nova.addServer({ status: 'ACTIVE', flavorId: '2' }).id;
    const guard = new QuotaGuard(client, { ...FAST, minDelayMs: 10_000, baseDelayMs: 10_000, maxDelayMs: 10_000 });
    const t0 = performance.now();
    const created = guard.createServer(body('after-delete'));
    while (guard.stats.waits === 0) await new Promise((r) => setTimeout(r, 2));
    await client.deleteServer(holder, { wait: true, intervalMs: 5 });
    const s = await created;
    expect(nova.getServerState(s.id)?.name).toBe('after-delete');
    expect(performance.now() - t0).toBeLessThan(3000);
    expect(guard.stats.waits).toBe(1);
  });
});
