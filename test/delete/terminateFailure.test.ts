/**
 * Nova's failed terminate (`terminate_instance` records a fault, sets vm_state ERROR and leaves
 * task_state `deleting`; a repeated DELETE is then ignored): a wait must end with the failure, not
 * wait out its timeout. A server that was in ERROR before its DELETE (an old fault) is deleted as usual.
 * FakeNova through its in-process adapter, on fake timers.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DeleteFailedError, NovaClient, waitForDelete } from '../../src/index.js';
import type { FakeNova } from '../../src/testing/index.js';
import { startNovaAsShipped } from '../helpers.js';

afterEach(() => {
  vi.useRealTimers();
});

const clientOf = (n: FakeNova): NovaClient =>
  new NovaClient({ endpoint: n.endpoint, token: 'admin:demo', microversion: '2.79', adapter: n.adapter, maxRequestsPerSecond: Number.POSITIVE_INFINITY });

async function settle<T>(p: Promise<T>, stepMs = 100, maxMs = 600_000): Promise<{ value?: T; error?: unknown; atMs: number }> {
  const t0 = Date.now();
  let out: { value?: T; error?: unknown; atMs: number } | undefined;
  p.then(
    (value) => (out = { value, atMs: Date.now() - t0 }),
    (error: unknown) => (out = { error, atMs: Date.now() - t0 }),
  );
  for (let t = 0; t < maxMs && !out; t += stepMs) await vi.advanceTimersByTimeAsync(stepMs);
  if (!out) throw new Error('did not settle');
  return out;
}

describe("Nova's failed terminate: ERROR with task_state deleting and a fresh fault", () => {
  it('deleteServer ends with DeleteFailedError and the fault, long before timeoutMs', async () => {
    const nova = await startNovaAsShipped({ deleteDelayMs: 1500, terminateErrorTaskState: 'deleting' });
    vi.useFakeTimers();
    const client = clientOf(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    nova.setServerBehavior(id, { onDelete: 'error', faultMessage: 'libvirt: domain not found' });
    const r = await settle(client.deleteServer(id, { wait: true, intervalMs: 1000, timeoutMs: 300_000 }));
    expect(r.error).toBeInstanceOf(DeleteFailedError);
    expect((r.error as DeleteFailedError).faultMessage).toBe('libvirt: domain not found');
    expect((r.error as DeleteFailedError).lastStatus).toBe('ERROR');
    expect(r.atMs).toBeLessThan(5000);
    expect(client.unconfirmedDeletes()).toMatchObject([{ serverId: id, state: 'failed' }]);
  });

  it("waitForDelete ends with outcome 'error' and the server's fault", async () => {
    const nova = await startNovaAsShipped({ deleteDelayMs: 1500, terminateErrorTaskState: 'deleting' });
    vi.useFakeTimers();
    const client = clientOf(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    nova.setServerBehavior(id, { onDelete: 'error', faultMessage: 'boom' });
    await client.deleteServer(id); // the DELETE's own Date anchors the fault's age
    const r = await settle(waitForDelete(client, id, { intervalMs: 1000, timeoutMs: 60_000 }));
    expect(r.value).toMatchObject({ outcome: 'error', lastStatus: 'ERROR', lastTaskState: 'deleting' });
    expect(r.value?.server?.fault?.message).toBe('boom');
  });

  it('a server that went to ERROR in the very second of its DELETE (a quota recheck fault) is deleted as usual', async () => {
    const nova = await startNovaAsShipped({ deleteDelayMs: 1500, terminateErrorTaskState: 'deleting' });
    vi.useFakeTimers();
    const client = clientOf(nova);
    const id = nova.addServer({ status: 'ERROR', faultMessage: 'Quota exceeded for cores' }).id;
    const r = await settle(client.deleteServer(id, { wait: true, intervalMs: 500 }));
    expect(r.value).toMatchObject({ outcome: 'deleted' });
  });

  it('a server in ERROR before its DELETE (an old fault) is deleted as usual, its ERROR/deleting phase waited out', async () => {
    const nova = await startNovaAsShipped({ deleteDelayMs: 1500, terminateErrorTaskState: 'deleting' });
    vi.useFakeTimers();
    const client = clientOf(nova);
    const id = nova.addServer({ status: 'ERROR', faultMessage: 'No valid host was found.' }).id;
    await vi.advanceTimersByTimeAsync(10_000); // the fault is old by the time of the DELETE
    const r = await settle(client.deleteServer(id, { wait: true, intervalMs: 500 }));
    expect(r.value).toMatchObject({ outcome: 'deleted' });
    expect(nova.getServerState(id)).toBeUndefined();
  });
});
