/** waitForDelete against FakeNova, on fake timers through its in-process adapter (exact times). */
import { describe, expect, it, vi } from 'vitest';
import { AbortError, NovaNetworkError, ServerError, ValidationError, waitForDelete, type DeleteProgress } from '../../src/index.js';
import { clientFor, serverPath, settle, startNova, useFakeClock } from '../helpers.js';

useFakeClock();

const SERVER_PATH = /^\/servers\/[^/]+$/;

describe('waitForDelete (port of osc-lib wait_for_delete)', () => {
  it('polls at once, then every intervalMs, until GET answers 404', async () => {
    const nova = await startNova({ deleteDelayMs: 60, deletedWindowMs: 0 });
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    await client.requestDelete(id);
    const seen: DeleteProgress[] = [];
    const r = await settle(waitForDelete(client, id, { intervalMs: 10, jitter: 0, onProgress: (p) => seen.push(p) }));
    expect(r.outcome).toBe('deleted');
    expect(r.polls).toBeGreaterThanOrEqual(2);
    expect(r.polls).toBe(nova.requestsTo('GET', serverPath(id)).length);
    expect(seen[0]).toMatchObject({ serverId: id, status: 'ACTIVE', taskState: 'deleting', progress: 0 });
    expect(seen.at(-1)).toMatchObject({ status: 'NOT_FOUND' });
    const gets = nova.requestsTo('GET', serverPath(id));
    expect(gets.at(-1)!.status).toBe(404);
  });

  it('Gone comes in several forms: status DELETED (any case) is not the end: the wait goes on to the 404', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    await client.requestDelete(id);
    nova.inject({ method: 'GET', path: SERVER_PATH, status: 200, body: { server: { id, status: 'ACTIVE', 'OS-EXT-STS:task_state': 'deleting' } } });
    nova.inject({ method: 'GET', path: SERVER_PATH, status: 200, body: { server: { id, status: 'deleted', 'OS-EXT-STS:vm_state': 'deleted', 'OS-EXT-STS:task_state': null } } });
    const r = await settle(waitForDelete(client, id, { intervalMs: 5 }));
    expect(r).toMatchObject({ outcome: 'deleted', polls: 3, lastStatus: 'NOT_FOUND', server: undefined });
    const gets = nova.requestsTo('GET', serverPath(id));
    expect(gets).toHaveLength(3);
    expect(gets.at(-1)!.status).toBe(404);
  });

  it('Gone comes in several forms: a server that stays DELETED past timeoutMs times out with last status DELETED, never deleted', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    nova.inject({ method: 'GET', path: SERVER_PATH, status: 200, body: { server: { id, status: 'DELETED', 'OS-EXT-STS:task_state': null } }, times: Infinity });
    const r = await settle(waitForDelete(client, id, { intervalMs: 5, timeoutMs: 200 }));
    expect(r).toMatchObject({ outcome: 'timeout', lastStatus: 'DELETED' });
    expect(r.polls).toBeGreaterThanOrEqual(2);
  });

  it('Gone comes in several forms: an immediate 404 resolves deleted after one poll', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const r = await settle(waitForDelete(client, '11111111-aaaa-4bbb-8ccc-000000000003', { intervalMs: 5 }));
    expect(r).toMatchObject({ outcome: 'deleted', polls: 1, lastStatus: 'NOT_FOUND' });
  });

  it('Soft-delete clouds: SOFT_DELETED ends the wait as soft-deleted', async () => {
    const nova = await startNova({ softDelete: true });
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    await client.requestDelete(id);
    const r = await settle(waitForDelete(client, id, { intervalMs: 5, timeoutMs: 2000 }));
    expect(r.outcome).toBe('soft-deleted');
    expect(r.server?.status).toBe('SOFT_DELETED');
  });

  it('ERROR while task_state is deleting is still in progress; ERROR with no task is an error', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ERROR' }).id;
    nova.inject({ method: 'GET', path: SERVER_PATH, status: 200, body: { server: { id, status: 'ERROR', 'OS-EXT-STS:task_state': 'deleting' } }, times: 2 });
    nova.inject({ method: 'GET', path: SERVER_PATH, status: 200, body: { server: { id, status: 'ERROR', 'OS-EXT-STS:task_state': null, fault: { message: 'boom' } } } });
    const r = await settle(waitForDelete(client, id, { intervalMs: 5 }));
    expect(r).toMatchObject({ outcome: 'error', polls: 3, lastStatus: 'ERROR', lastTaskState: null });
    expect(r.server?.fault?.message).toBe('boom');
  });

  it('The wait loop that hangs or gives up early: 503 and a reset are retried, never taken as gone', async () => {
    const nova = await startNova({ deleteDelayMs: 400 });
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    await client.requestDelete(id);
    nova.inject({ method: 'GET', path: SERVER_PATH, status: 503, body: { computeFault: { code: 503, message: 'Service Unavailable' } } });
    nova.inject({ method: 'GET', path: SERVER_PATH, reset: true });
    const r = await settle(waitForDelete(client, id, { intervalMs: 5 }));
    expect(r.outcome).toBe('deleted');
    const gets = nova.requestsTo('GET', serverPath(id));
    expect(gets[0]!.status).toBe(503);
    expect(gets.at(-1)!.status).toBe(404);
    expect(gets.filter((g) => g.status === 200).length).toBeGreaterThanOrEqual(1);
    expect(r.polls).toBe(gets.length);
  });

  it('The wait loop that hangs or gives up early (variant): when the transient budget is spent it rejects with the transport error', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    nova.inject({ method: 'GET', path: SERVER_PATH, status: 503, body: { computeFault: { code: 503, message: 'Service Unavailable' } }, times: Infinity });
    const err = await settle(waitForDelete(client, id, { intervalMs: 2, pollRetries: 4 }).catch((e: unknown) => e));
    expect(err).toBeInstanceOf(ServerError);
    expect((err as ServerError).status).toBe(503);
    expect(nova.requestsTo('GET', serverPath(id))).toHaveLength(5);
  });

  it('The wait loop that hangs or gives up early: the timeout ends the wait (wall clock), and nothing polls afterwards', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    nova.setServerBehavior(id, { onDelete: 'never' });
    await client.requestDelete(id);
    const t0 = performance.now();
    const r = await settle(waitForDelete(client, id, { intervalMs: 10, timeoutMs: 200, jitter: 0 }));
    const took = performance.now() - t0;
    expect(r).toMatchObject({ outcome: 'timeout', lastStatus: 'ACTIVE', lastTaskState: 'deleting' });
    expect(took).toBe(200);
    // first poll at once, then one per 10 ms: at most 21 in 200 ms
    expect(r.polls).toBeGreaterThanOrEqual(4);
    expect(r.polls).toBeLessThanOrEqual(21);
    const count = nova.requests.length;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(nova.requests.length).toBe(count);
  });

  it('Servers stuck in deleting: a hung poll is cut by requestTimeoutMs and counted as one transient error', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    nova.inject({ method: 'GET', path: SERVER_PATH, hang: true });
    const r = await settle(waitForDelete(client, '00000000-0000-4000-8000-00000000dead', { intervalMs: 5, requestTimeoutMs: 50 }));
    expect(r).toMatchObject({ outcome: 'deleted', polls: 2 });
  });

  it('abort rejects at once with AbortError and leaves no request behind', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    nova.setServerBehavior(id, { onDelete: 'never' });
    await client.requestDelete(id);
    const ac = new AbortController();
    const p = waitForDelete(client, id, { intervalMs: 10, signal: ac.signal });
    setTimeout(() => ac.abort(), 30);
    const t0 = performance.now();
    await expect(settle(p)).rejects.toBeInstanceOf(AbortError);
    expect(performance.now() - t0).toBe(30);
    const count = nova.requests.length;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(nova.requests.length).toBe(count);
  });

  it('rejects bad input before any request', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    await expect(waitForDelete(client, '', {})).rejects.toBeInstanceOf(ValidationError);
    await expect(waitForDelete(client, 'x', { intervalMs: -1 })).rejects.toBeInstanceOf(ValidationError);
    await expect(waitForDelete(client, 'x', { timeoutMs: Number.NaN })).rejects.toBeInstanceOf(ValidationError);
    await expect(waitForDelete(client, 'x', { jitter: 2 })).rejects.toBeInstanceOf(ValidationError);
    expect(nova.requests).toHaveLength(0);
  });

  it('a connection refused poll is transient (NovaNetworkError) and ends with it when it persists', async () => {
    vi.useRealTimers(); // a real socket: connection refused comes from the kernel
    const nova = await startNova();
    const client = clientFor(nova, { adapter: undefined });
    await nova.close();
    const err = await settle(waitForDelete(client, '00000000-0000-4000-8000-00000000dead', { intervalMs: 1, pollRetries: 1 }).catch((e: unknown) => e));
    expect(err).toBeInstanceOf(NovaNetworkError);
    expect((err as NovaNetworkError).code).toBe('ECONNREFUSED');
  });
});
