/**
 * The coalesced waiter gives the same outcomes as the per-server waiter on every delete field case
 * (the delete field cases of `docs/field-cases.md`), with several deletes pending at once so
 * the coalesced path really serves them from `changes-since` listings. Each case runs both ways, on
 * fake timers through FakeNova's in-process adapter, so times are exact.
 */
import { describe, expect, it, vi } from 'vitest';
import {
  AbortError,
  ConflictError,
  DeleteFailedError,
  DeleteTimeoutError,
  ServerError,
  waitForDelete,
  type NovaClient,
} from '../../src/index.js';
import type { FakeNova } from '../../src/testing/index.js';
import { clientFor, serverPath, settle, startNova, useFakeClock } from '../helpers.js';

useFakeClock();

const SERVER_PATH = /^\/servers\/(?!detail$)[^/]+$/;
const LISTING = '/servers/detail';
const FAST = { intervalMs: 10, jitter: 0 } as const;

function servers(nova: FakeNova, n: number, flavorId = '1'): string[] {
  return Array.from({ length: n }, () => nova.addServer({ status: 'ACTIVE', flavorId }).id);
}

/** The path a poll of this mode goes to (for injecting poll faults the same way in both modes). */
const pollPath = (coalesce: boolean): string | RegExp => (coalesce ? LISTING : SERVER_PATH);

/** In coalesced mode the listing must have served the waits; in per-server mode there is none. */
function expectPathUsed(nova: FakeNova, coalesce: boolean): void {
  const listings = nova.requestsTo('GET', LISTING).length;
  if (coalesce) expect(listings).toBeGreaterThan(0);
  else expect(listings).toBe(0);
}

describe.each([true, false])('delete field cases with coalesce: %s', (coalesce) => {
  const client = (nova: FakeNova): NovaClient => clientFor(nova, { coalesce, maxRequestsPerSecond: Number.POSITIVE_INFINITY });

  it('Gone comes in several forms: 404 after the DELETED window ends every wait as deleted, cores freed', async () => {
    const nova = await startNova({ deleteDelayMs: 30, deletedWindowMs: 10, maxTotalInstances: -1 });
    const c = client(nova);
    const ids = servers(nova, 6, '2');
    expect(nova.usage().cores).toBe(12);
    const r = await settle(c.deleteServers(ids, { wait: true, ...FAST }));
    expect(r.failed).toEqual([]);
    expect(r.results.map((x) => x.status === 'fulfilled' && x.value.outcome)).toEqual(Array(6).fill('deleted'));
    // 'deleted' only after the 404: the usage has dropped already.
    expect(nova.usage().cores).toBe(0);
    expectPathUsed(nova, coalesce);
  });

  it('Gone comes in several forms: status DELETED is not deleted: every wait goes on to the 404, when the cores are free', async () => {
    // GET shows DELETED for 400 ms after the delete: no wait may end in that window.
    const nova = await startNova({ deleteDelayMs: 20, deletedWindowMs: 400, maxTotalInstances: -1 });
    const c = client(nova);
    const ids = servers(nova, 5);
    const r = await settle(c.deleteServers(ids, { wait: true, ...FAST, timeoutMs: 10000 }));
    expect(r.results.map((x) => x.status === 'fulfilled' && x.value.outcome)).toEqual(Array(5).fill('deleted'));
    // Resolved only once Nova answers 404 for every one of them: nothing left counted.
    for (const id of ids) expect(nova.getServerState(id)).toBeUndefined();
    expect(nova.usage().cores).toBe(0);
    for (const x of r.results) if (x.status === 'fulfilled') expect(x.value.server).toBeUndefined();
    expectPathUsed(nova, coalesce);
  });

  it('Gone comes in several forms: a DELETED window longer than timeoutMs ends as DeleteTimeoutError with last status DELETED', async () => {
    const nova = await startNova({ deleteDelayMs: 20, deletedWindowMs: 60000, maxTotalInstances: -1 });
    const c = client(nova);
    const ids = servers(nova, 3);
    const r = await settle(c.deleteServers(ids, { wait: true, ...FAST, timeoutMs: 400 }));
    for (const x of r.results) {
      expect(x.status).toBe('rejected');
      const e = (x as PromiseRejectedResult).reason as DeleteTimeoutError;
      expect(e).toBeInstanceOf(DeleteTimeoutError);
      expect(e.lastStatus).toBe('DELETED');
    }
    expect(c.unconfirmedDeletes().map((u) => u.serverId).sort()).toEqual([...ids].sort());
  });

  it('Gone comes in several forms: a 404 on DELETE is already-gone with no polls, next to servers that are waited for', async () => {
    const nova = await startNova({ deleteDelayMs: 20 });
    const c = client(nova);
    const ids = servers(nova, 3);
    const gone = '11111111-aaaa-4bbb-8ccc-000000000003';
    const r = await settle(c.deleteServers([...ids, gone], { wait: true, ...FAST }));
    const byId = new Map(r.results.map((x) => [x.serverId, x]));
    expect(byId.get(gone)).toMatchObject({ status: 'fulfilled', value: { outcome: 'already-gone', polls: 0 } });
    for (const id of ids) expect(byId.get(id)).toMatchObject({ status: 'fulfilled', value: { outcome: 'deleted' } });
    expect(nova.requestsTo('GET', serverPath(gone))).toHaveLength(0);
  });

  it('Gone comes in several forms: waitForDelete on ids that never existed resolves deleted (confirmed by a 404)', async () => {
    const nova = await startNova();
    const c = client(nova);
    const ids = ['00000001-0000-4000-8000-00000000dead', '00000002-0000-4000-8000-00000000dead', '00000003-0000-4000-8000-00000000dead'];
    const r = await settle(Promise.all(ids.map((id) => waitForDelete(c, id, FAST))));
    expect(r.map((x) => [x.outcome, x.lastStatus])).toEqual(Array(3).fill(['deleted', 'NOT_FOUND']));
    for (const id of ids) expect(nova.requestsTo('GET', serverPath(id)).at(-1)?.status).toBe(404);
  });

  it('A DELETE accepted but never carried out: a lost DELETE is re-issued once for that server only', async () => {
    const nova = await startNova({ deleteDelayMs: 20 });
    const c = client(nova);
    const ids = servers(nova, 4);
    nova.setServerBehavior(ids[0]!, { onDelete: 'ignore' });
    const r = await settle(c.deleteServers(ids, { wait: true, ...FAST, redeleteAfterMs: 60 }));
    expect(r.failed).toEqual([]);
    expect(r.results.map((x) => x.status === 'fulfilled' && x.value.outcome)).toEqual(Array(4).fill('deleted'));
    expect(nova.requestsTo('DELETE', serverPath(ids[0]!))).toHaveLength(2);
    for (const id of ids.slice(1)) expect(nova.requestsTo('DELETE', serverPath(id))).toHaveLength(1);
    expectPathUsed(nova, coalesce);
  });

  it('A DELETE accepted but never carried out (control): servers seen in task_state deleting get no second DELETE', async () => {
    const nova = await startNova({ deleteDelayMs: 150 });
    const c = client(nova);
    const ids = servers(nova, 3);
    const r = await settle(c.deleteServers(ids, { wait: true, ...FAST, redeleteAfterMs: 40 }));
    expect(r.failed).toEqual([]);
    for (const id of ids) expect(nova.requestsTo('DELETE', serverPath(id))).toHaveLength(1);
  });

  it('A DELETE accepted but never carried out: a locked server throws ConflictError at once while the others are deleted', async () => {
    const nova = await startNova({ deleteDelayMs: 20 });
    const c = clientFor(nova, { coalesce, token: `member:${nova.projectId}` });
    const ids = servers(nova, 3);
    nova.lock(ids[1]!);
    const r = await settle(c.deleteServers(ids, { wait: true, ...FAST }));
    expect(r.failed.map((f) => f.serverId)).toEqual([ids[1]]);
    expect(r.failed[0]!.error).toBeInstanceOf(ConflictError);
    expect(r.succeeded.sort()).toEqual([ids[0], ids[2]].sort());
    expect(nova.requestsTo('GET', serverPath(ids[1]!))).toHaveLength(0);
  });

  it('Servers stuck in deleting: stuck servers time out with their last state; the others are deleted; the batch settles at the timeout', async () => {
    const nova = await startNova({ deleteDelayMs: 30 });
    const c = client(nova);
    const ids = servers(nova, 5);
    const stuck = ids.slice(0, 2);
    for (const id of stuck) nova.setServerBehavior(id, { onDelete: 'never' });
    const t0 = performance.now();
    const r = await settle(c.deleteServers(ids, { wait: true, ...FAST, timeoutMs: 200 }));
    const took = performance.now() - t0;
    expect(r.failed.map((f) => f.serverId).sort()).toEqual([...stuck].sort());
    for (const f of r.failed) {
      expect(f.error).toBeInstanceOf(DeleteTimeoutError);
      expect(f.error).toMatchObject({ lastStatus: 'ACTIVE', lastTaskState: 'deleting', timeoutMs: 200 });
      expect((f.error as DeleteTimeoutError).polls).toBeGreaterThanOrEqual(2);
    }
    expect(r.succeeded.sort()).toEqual(ids.slice(2).sort());
    // On the fake clock the batch settles exactly at its timeout.
    expect(took).toBe(200);
    const count = nova.requests.length;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(nova.requests.length).toBe(count);
    expectPathUsed(nova, coalesce);
  });

  it('Servers stuck in deleting: a hung poll is cut by requestTimeoutMs, counted as a transient failure, and the waits end deleted', async () => {
    const nova = await startNova({ deleteDelayMs: 20 });
    const c = client(nova);
    const ids = servers(nova, 3);
    nova.inject({ method: 'GET', path: pollPath(coalesce), hang: true });
    const r = await settle(c.deleteServers(ids, { wait: true, ...FAST, requestTimeoutMs: 60 }));
    expect(r.results.map((x) => x.status === 'fulfilled' && x.value.outcome)).toEqual(Array(3).fill('deleted'));
    expect(nova.requestsTo('GET', pollPath(coalesce)).some((q) => q.status === 0)).toBe(true);
  });

  it('The wait loop that hangs or gives up early: 503 and a reset on the polls are never taken as gone', async () => {
    const nova = await startNova({ deleteDelayMs: 80 });
    const c = client(nova);
    const ids = servers(nova, 4);
    for (const id of ids) await c.requestDelete(id);
    nova.inject({ method: 'GET', path: pollPath(coalesce), status: 503, body: { computeFault: { code: 503, message: 'Service Unavailable' } } });
    nova.inject({ method: 'GET', path: pollPath(coalesce), reset: true });
    const settledWhileAlive: string[] = [];
    const r = await settle(
      Promise.all(
        ids.map((id) =>
          waitForDelete(c, id, FAST).then((res) => {
            if (nova.getServerState(id)?.status === 'ACTIVE') settledWhileAlive.push(id);
            return res;
          }),
        ),
      ),
    );
    expect(settledWhileAlive).toEqual([]);
    expect(r.map((x) => x.outcome)).toEqual(Array(4).fill('deleted'));
    const polls = nova.requestsTo('GET', pollPath(coalesce));
    expect(polls[0]!.status).toBe(503);
    expectPathUsed(nova, coalesce);
  });

  it('The wait loop that hangs or gives up early (variant): persistent 503 on every look rejects every wait with the 503 once its budget is spent', async () => {
    const nova = await startNova();
    const c = client(nova);
    const ids = servers(nova, 3);
    for (const id of ids) nova.setServerBehavior(id, { onDelete: 'never' });
    for (const id of ids) await c.requestDelete(id);
    for (const path of [LISTING, SERVER_PATH]) {
      nova.inject({ method: 'GET', path, status: 503, body: { computeFault: { code: 503, message: 'Service Unavailable' } }, times: Infinity });
    }
    const r = await settle(Promise.allSettled(ids.map((id) => waitForDelete(c, id, { intervalMs: 2, pollRetries: 2 }))));
    for (const x of r) {
      expect(x.status).toBe('rejected');
      expect((x as PromiseRejectedResult).reason).toBeInstanceOf(ServerError);
      expect(((x as PromiseRejectedResult).reason as ServerError).status).toBe(503);
    }
  });

  it('a listing that always fails never fails a wait: each server is looked at by its own GET', async () => {
    const nova = await startNova({ deleteDelayMs: 30 });
    const c = client(nova);
    const ids = servers(nova, 4);
    nova.inject({ method: 'GET', path: LISTING, status: 503, body: { computeFault: { code: 503, message: 'Service Unavailable' } }, times: Infinity });
    const r = await settle(c.deleteServers(ids, { wait: true, ...FAST, pollRetries: 0 }));
    expect(r.results.map((x) => x.status === 'fulfilled' && x.value.outcome)).toEqual(Array(4).fill('deleted'));
    for (const id of ids) expect(nova.requestsTo('GET', serverPath(id)).length).toBeGreaterThan(0);
  });

  it('The wait loop that hangs or gives up early: stuck servers time out (wall clock), and nothing polls afterwards', async () => {
    const nova = await startNova();
    const c = client(nova);
    const ids = servers(nova, 4);
    for (const id of ids) nova.setServerBehavior(id, { onDelete: 'never' });
    for (const id of ids) await c.requestDelete(id);
    const t0 = performance.now();
    const r = await settle(Promise.all(ids.map((id) => waitForDelete(c, id, { intervalMs: 10, timeoutMs: 120, jitter: 0 }))));
    const took = performance.now() - t0;
    for (const x of r) {
      expect(x).toMatchObject({ outcome: 'timeout', lastStatus: 'ACTIVE', lastTaskState: 'deleting' });
      expect(x.polls).toBeGreaterThanOrEqual(2);
    }
    expect(took).toBe(120);
    const count = nova.requests.length;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(nova.requests.length).toBe(count);
  });

  it('Soft-delete clouds: SOFT_DELETED ends every wait as soft-deleted, and the cores are released', async () => {
    const nova = await startNova({ softDelete: true, deleteDelayMs: 20 });
    const c = client(nova);
    const ids = servers(nova, 4, '2');
    const r = await settle(c.deleteServers(ids, { wait: true, ...FAST, timeoutMs: 3000 }));
    expect(r.results.map((x) => x.status === 'fulfilled' && x.value.outcome)).toEqual(Array(4).fill('soft-deleted'));
    expect((await c.getLimits()).absolute.totalCoresUsed).toBe(0);
    expectPathUsed(nova, coalesce);
  });

  it('Soft-delete clouds: forceSoftDeleted force-deletes and waits for each 404', async () => {
    const nova = await startNova({ softDelete: true });
    const c = client(nova);
    const ids = servers(nova, 3);
    const r = await settle(c.deleteServers(ids, { wait: true, ...FAST, forceSoftDeleted: true }));
    expect(r.results.map((x) => x.status === 'fulfilled' && x.value.outcome)).toEqual(Array(3).fill('deleted'));
    for (const id of ids) {
      expect(nova.requestsTo('POST', `/servers/${id}/action`)).toHaveLength(1);
      expect(nova.getServerState(id)).toBeUndefined();
    }
  });

  it('ERROR with no task: waitForDelete ends with outcome error and Nova\'s fault', async () => {
    const nova = await startNova({ deleteDelayMs: 20 });
    const c = client(nova);
    const ids = servers(nova, 3);
    for (const id of ids) nova.setServerBehavior(id, { onDelete: 'error', faultMessage: `boom ${id}` });
    for (const id of ids) await c.requestDelete(id);
    const r = await settle(Promise.all(ids.map((id) => waitForDelete(c, id, FAST))));
    r.forEach((x, i) => {
      expect(x).toMatchObject({ outcome: 'error', lastStatus: 'ERROR', lastTaskState: null });
      expect(x.server?.fault?.message).toBe(`boom ${ids[i]}`);
    });
    expectPathUsed(nova, coalesce);
  });

  it('ERROR once is re-deleted and ends deleted; ERROR twice is DeleteFailedError with the fault', async () => {
    const nova = await startNova({ deleteDelayMs: 15 });
    const c = client(nova);
    const once = servers(nova, 3);
    for (const id of once) nova.setServerBehavior(id, { onDelete: 'error' });
    const r = await settle(c.deleteServers(once, { wait: true, ...FAST }));
    expect(r.results.map((x) => x.status === 'fulfilled' && [x.value.outcome, x.value.deleteAttempts])).toEqual(Array(3).fill(['deleted', 2]));

    nova.setDefaultDeleteBehavior('error');
    const twice = servers(nova, 3);
    const r2 = await settle(c.deleteServers(twice, { wait: true, ...FAST }));
    expect(r2.failed).toHaveLength(3);
    for (const f of r2.failed) {
      expect(f.error).toBeInstanceOf(DeleteFailedError);
      expect(f.error).toMatchObject({ serverId: f.serverId, deleteAttempts: 2, lastStatus: 'ERROR' });
      expect((f.error as DeleteFailedError).faultMessage).toBe(nova.getServerState(f.serverId)?.faultMessage);
    }
  });

  it('abort of one wait among many rejects it at once; the others still end deleted', async () => {
    const nova = await startNova({ deleteDelayMs: 60 });
    const c = client(nova);
    const ids = servers(nova, 4);
    for (const id of ids) await c.requestDelete(id);
    const ac = new AbortController();
    const waits = ids.map((id, i) => waitForDelete(c, id, { ...FAST, signal: i === 0 ? ac.signal : undefined }));
    setTimeout(() => ac.abort(), 20);
    const t0 = performance.now();
    await expect(settle(waits[0]!)).rejects.toBeInstanceOf(AbortError);
    expect(performance.now() - t0).toBe(20);
    const rest = await settle(Promise.all(waits.slice(1)));
    expect(rest.map((x) => x.outcome)).toEqual(['deleted', 'deleted', 'deleted']);
  });
});
