/**
 * Conformance of FakeNova to tempest's delete-state matrix (`tempest/api/compute/servers/
 * test_delete_server.py` deletes from BUILD, ACTIVE, SHUTOFF, PAUSED, SUSPENDED, SHELVED(_OFFLOADED),
 * VERIFY_RESIZE; `tempest/common/waiters.py` `wait_for_server_termination` ends on 404, fails on
 * ERROR and force-deletes SOFT_DELETED), as real Nova 26.2 answers each row. On fake timers through
 * the in-process adapter, so every transition is checked at its exact time.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { FakeNova, FakeNovaOptions } from '../../src/testing/index.js';
import { startNovaAsShipped as startNova } from '../helpers.js';
import { via } from './fakeNovaFetch.js';

const { call } = via('adapter');

afterEach(() => {
  vi.useRealTimers();
});

async function start(options: FakeNovaOptions = {}): Promise<FakeNova> {
  const n = await startNova({ deleteDelayMs: 100, ...options });
  vi.useFakeTimers();
  return n;
}

/** [status, vm_state, task_state] as GET answers it, or [404, body text]. */
async function state(n: FakeNova, id: string): Promise<unknown[]> {
  const r = await call(n, 'GET', `/servers/${id}`);
  if (r.status === 404) return [404, r.text];
  const s = r.json.server;
  return [s.status, s['OS-EXT-STS:vm_state'], s['OS-EXT-STS:task_state']];
}

const notFoundBody = (id: string): string => `{"itemNotFound": {"code": 404, "message": "Instance ${id} could not be found."}}`;

async function coresUsed(n: FakeNova): Promise<number> {
  return (await call(n, 'GET', '/limits')).json.limits.absolute.totalCoresUsed as number;
}

describe('tempest delete matrix: a DELETE from each state', () => {
  it.each([
    ['BUILD', 'building'],
    ['ACTIVE', 'active'],
    ['SHUTOFF', 'stopped'],
    ['PAUSED', 'paused'],
    ['SUSPENDED', 'suspended'],
    ['SHELVED', 'shelved'],
    ['VERIFY_RESIZE', 'resized'],
    ['ERROR', 'error'],
  ])('%s: 204, then %s/deleting (status unchanged), DELETED at 100 ms, 404 itemNotFound at 150 ms; counted until the 404', async (status, vmState) => {
    const n = await start();
    const id = n.addServer({ status, flavorId: '2' }).id;
    const del = await call(n, 'DELETE', `/servers/${id}`);
    expect([del.status, del.text]).toEqual([204, '']);
    expect(await state(n, id)).toEqual([status, vmState, 'deleting']);
    expect(await coresUsed(n)).toBe(2);
    await vi.advanceTimersByTimeAsync(100);
    expect(await state(n, id)).toEqual(['DELETED', 'deleted', null]);
    expect(await coresUsed(n)).toBe(2);
    await vi.advanceTimersByTimeAsync(49);
    expect((await state(n, id))[0]).toBe('DELETED');
    await vi.advanceTimersByTimeAsync(1);
    expect(await state(n, id)).toEqual([404, notFoundBody(id)]);
    expect(await coresUsed(n)).toBe(0);
    const again = await call(n, 'DELETE', `/servers/${id}`);
    expect([again.status, again.text]).toEqual([404, notFoundBody(id)]);
  });

  it('SHELVED_OFFLOADED: no host, so the API deletes it locally: 404 right after the 204, no DELETED window', async () => {
    const n = await start();
    const id = n.addServer({ status: 'SHELVED_OFFLOADED', flavorId: '2' }).id;
    expect(await coresUsed(n)).toBe(2);
    expect((await call(n, 'DELETE', `/servers/${id}`)).status).toBe(204);
    expect(await state(n, id)).toEqual([404, notFoundBody(id)]);
    expect(await coresUsed(n)).toBe(0);
  });

  it('a DELETE repeated while deleting answers 204 and changes nothing', async () => {
    const n = await start();
    const id = n.addServer().id;
    await call(n, 'DELETE', `/servers/${id}`);
    await vi.advanceTimersByTimeAsync(60);
    expect((await call(n, 'DELETE', `/servers/${id}`)).status).toBe(204);
    await vi.advanceTimersByTimeAsync(40);
    expect((await state(n, id))[0]).toBe('DELETED');
    await vi.advanceTimersByTimeAsync(50);
    expect((await state(n, id))[0]).toBe(404);
  });
});

describe("tempest's waiter rows", () => {
  it('SOFT_DELETED (reclaim_instance_interval > 0): soft-deleting, SOFT_DELETED and not counted; forceDelete 202, then the DELETED window and 404', async () => {
    const n = await start({ softDelete: true });
    const id = n.addServer({ flavorId: '2' }).id;
    await call(n, 'DELETE', `/servers/${id}`);
    expect(await state(n, id)).toEqual(['ACTIVE', 'active', 'soft-deleting']);
    await vi.advanceTimersByTimeAsync(100);
    expect(await state(n, id)).toEqual(['SOFT_DELETED', 'soft-delete', null]);
    expect(await coresUsed(n)).toBe(0);
    const force = await call(n, 'POST', `/servers/${id}/action`, { body: { forceDelete: null } });
    expect([force.status, force.text]).toEqual([202, '']);
    expect(await state(n, id)).toEqual(['SOFT_DELETED', 'soft-delete', 'deleting']);
    await vi.advanceTimersByTimeAsync(100);
    expect(await state(n, id)).toEqual(['DELETED', 'deleted', null]);
    await vi.advanceTimersByTimeAsync(50);
    expect(await state(n, id)).toEqual([404, notFoundBody(id)]);
  });

  it("ERROR while deleting, as Nova leaves it (terminateErrorTaskState 'deleting'): fault shown, still counted, a re-DELETE is ignored", async () => {
    const n = await start({ terminateErrorTaskState: 'deleting' });
    const id = n.addServer({ flavorId: '2' }).id;
    n.setServerBehavior(id, { onDelete: 'error', faultMessage: 'Failed to terminate instance: boom' });
    await call(n, 'DELETE', `/servers/${id}`);
    expect(await state(n, id)).toEqual(['ACTIVE', 'active', 'deleting']);
    await vi.advanceTimersByTimeAsync(100);
    expect(await state(n, id)).toEqual(['ERROR', 'error', 'deleting']);
    const fault = (await call(n, 'GET', `/servers/${id}`)).json.server.fault;
    expect(fault).toMatchObject({ code: 500, message: 'Failed to terminate instance: boom' });
    expect(await coresUsed(n)).toBe(2);
    expect((await call(n, 'DELETE', `/servers/${id}`)).status).toBe(204);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(await state(n, id)).toEqual(['ERROR', 'error', 'deleting']);
    expect(n.pendingTimers()).toBe(0);
  });

  it('ERROR while deleting with the default (task_state cleared): a re-DELETE deletes it', async () => {
    const n = await start();
    const id = n.addServer().id;
    n.setServerBehavior(id, { onDelete: 'error' });
    await call(n, 'DELETE', `/servers/${id}`);
    await vi.advanceTimersByTimeAsync(100);
    expect(await state(n, id)).toEqual(['ERROR', 'error', null]);
    await call(n, 'DELETE', `/servers/${id}`);
    await vi.advanceTimersByTimeAsync(150);
    expect((await state(n, id))[0]).toBe(404);
  });

  it('404 for a server never known, on GET and DELETE: itemNotFound naming the id', async () => {
    const n = await start();
    const id = '6f0c1b52-0000-4000-8000-000000000000';
    for (const method of ['GET', 'DELETE']) {
      const r = await call(n, method, `/servers/${id}`);
      expect([r.status, r.text, r.headers.get('content-type')]).toEqual([404, notFoundBody(id), 'application/json; charset=UTF-8']);
    }
  });
});
