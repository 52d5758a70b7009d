/**
 * Issue 20 item 4, inside one process: a `deleteServer` without `wait` leaves its pending deletion to
 * the client's watcher while a QuotaGuard listens on the client. Nova counts the server's cores until
 * its 404 (so the guard does too); the watcher's look that sees the 404 confirms the deletion, and the
 * guard wakes its waiting create then, not at its next `/limits` read. Fake timers, FakeNova.
 */
import { describe, expect, it } from 'vitest';
import { deleteServer } from '../../src/index.js';
import { clientFor, settle, startNova, useFakeClock, T0 } from '../helpers.js';
import { body, guardFor } from '../guard/fixtures.js';

useFakeClock();

describe('a deletion nobody waits for is followed by the watcher while a guard listens', () => {
  it('deleteServer({ wait: false }) frees the waiting guarded create at the 404, not at the next /limits read 30 s later', async () => {
    const nova = await startNova({ deleteDelayMs: 3000, deletedWindowMs: 0 });
    nova.setQuota({ cores: 4 });
    const held = nova.addServer({ flavorId: '3', status: 'ACTIVE' }).id; // 4 cores: the whole quota
    const client = clientFor(nova, { maxRequestsPerSecond: Infinity });
    const guard = guardFor(nova, { baseDelayMs: 30_000, maxDelayMs: 30_000, maxWaitMs: 300_000, activeIntervalMs: 1000, jitter: 0 }, client);
    const created = guard.createServer(body('next', '3'));
    const deleted = await settle(deleteServer(client, held, { wait: false, intervalMs: 1000, jitter: 0 }));
    expect(deleted.outcome).toBe('delete-requested');
    const server = await settle(created);
    expect(server.status).toBe('ACTIVE');
    const gone = nova.requests.filter((r) => r.method === 'GET' && r.path === `/servers/${held}` && r.status === 404)[0];
    const post = nova.requests.filter((r) => r.method === 'POST' && r.path === '/servers' && r.status === 202)[0];
    // The 404 comes one look after the compute side finishes (3 s); the create goes out right after it.
    expect(gone).toBeDefined();
    expect(gone!.timeMs - T0).toBeLessThanOrEqual(4000);
    // Held until the 404: the create went out only after it, within the guard's wake-up.
    expect(post!.timeMs).toBeGreaterThanOrEqual(gone!.timeMs);
    expect(post!.timeMs - gone!.timeMs).toBeLessThan(1000);
    expect(nova.requests.filter((r) => r.method === 'POST' && r.path === '/servers')).toHaveLength(1);
    expect(client.unconfirmedDeletes()).toEqual([]);
    await guard.close();
    expect(client.deleteEngine.idle).toBe(true);
  });

  it('the follow looks until QuotaGuard.close() (its last listener) and then stops: nothing left running', async () => {
    const nova = await startNova({ deleteDelayMs: 3000, deletedWindowMs: 0 });
    const stuck = nova.addServer({ flavorId: '1', status: 'ACTIVE' }).id;
    nova.setServerBehavior(stuck, { onDelete: 'never' });
    const client = clientFor(nova, { maxRequestsPerSecond: Infinity });
    const guard = guardFor(nova, {}, client);
    await settle(deleteServer(client, stuck, { wait: false, intervalMs: 1000, jitter: 0 }));
    await settle(new Promise((resolve) => setTimeout(resolve, 5500)));
    const looks = (): number => nova.requests.filter((r) => r.method === 'GET' && r.path === `/servers/${stuck}`).length;
    expect(looks()).toBe(6); // at 0, 1, ..., 5 s
    expect(client.deleteEngine.idle).toBe(false);
    await guard.close();
    expect(client.deleteEngine.idle).toBe(true);
    await settle(new Promise((resolve) => setTimeout(resolve, 10_000)));
    expect(looks()).toBe(6);
    expect(client.unconfirmedDeletes().map((d) => d.serverId)).toEqual([stuck]);
  });
});
