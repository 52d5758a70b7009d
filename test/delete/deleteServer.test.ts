/** deleteServer / deleteServers against FakeNova, on fake timers through its in-process adapter (exact times). */
import { describe, expect, it } from 'vitest';
import {
  ConflictError,
  NotFoundError,
  DeleteFailedError,
  DeleteTimeoutError,
  ValidationError,
  type DeleteServerResult,
} from '../../src/index.js';
import { clientFor, serverPath, settle, startNova, useFakeClock } from '../helpers.js';

useFakeClock();

const SERVER_PATH = /^\/servers\/[^/]+$/;
const FAST = { intervalMs: 5, jitter: 0 } as const;

describe('client.deleteServer', () => {
  it('without wait: one DELETE, resolves delete-requested, no polling', async () => {
    const nova = await startNova({ deleteDelayMs: 5000 });
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    const r = await settle(client.deleteServer(id));
    expect(r).toMatchObject({ outcome: 'delete-requested', deleteAttempts: 1, polls: 0 });
    expect(nova.requestsTo('GET', serverPath(id))).toHaveLength(0);
    expect(nova.getServerState(id)?.taskState).toBe('deleting');
  });

  it('with wait: resolves deleted once GET answers 404, and the cores are free', async () => {
    const nova = await startNova({ deleteDelayMs: 40 });
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE', flavorId: '2' }).id;
    expect(nova.usage().cores).toBe(2);
    const r = await settle(client.deleteServer(id, { wait: true, ...FAST }));
    expect(r.outcome).toBe('deleted');
    expect(r.deleteAttempts).toBe(1);
    expect(nova.requestsTo('GET', serverPath(id)).at(-1)!.status).toBe(404);
    expect(nova.usage().cores).toBe(0);
    expect((await client.getLimits()).absolute.totalCoresUsed).toBe(0);
  });

  it('with wait: after status DELETED it confirms the 404, when Nova frees the cores (real Nova 26.2 timeline)', async () => {
    const nova = await startNova({ deleteDelayMs: 30, deletedWindowMs: 120 });
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE', flavorId: '2' }).id;
    const r = await settle(client.deleteServer(id, { wait: true, ...FAST }));
    expect(r.outcome).toBe('deleted');
    expect(r.server).toBeUndefined();
    const gets = nova.requestsTo('GET', serverPath(id));
    expect(gets.at(-1)!.status).toBe(404);
    expect((await client.getLimits()).absolute.totalCoresUsed).toBe(0);
  });

  it('with wait: resolves deleted only at the 404 after the DELETED window, whatever confirmGoneMs says', async () => {
    const nova = await startNova({ deleteDelayMs: 30, deletedWindowMs: 300 });
    const client = clientFor(nova);
    for (const confirmGoneMs of [0, 50]) {
      const a = nova.addServer({ status: 'ACTIVE', flavorId: '2' }).id;
      const seen: string[] = [];
      const r = await settle(client.deleteServer(a, { wait: true, ...FAST, confirmGoneMs, onProgress: (p) => seen.push(String(p.status)) }));
      expect(r.outcome).toBe('deleted');
      expect(r.server).toBeUndefined();
      expect(seen).toContain('DELETED');
      expect(seen.at(-1)).toBe('NOT_FOUND');
      expect(nova.requestsTo('GET', serverPath(a)).at(-1)!.status).toBe(404);
      expect(nova.getServerState(a)).toBeUndefined();
    }
  });

  it('Gone comes in several forms: 404 on DELETE resolves already-gone with no polls', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const r = await settle(client.deleteServer('11111111-aaaa-4bbb-8ccc-000000000003', { wait: true, ...FAST }));
    expect(r).toMatchObject({ outcome: 'already-gone', polls: 0, deleteAttempts: 1 });
    // No look at the server itself; one listing of the project checks the 404 (an orphaned mapping would still be listed).
    expect(nova.requests.filter((q) => q.method === 'GET').map((q) => q.path)).toEqual(['/servers']);
  });

  it('A DELETE accepted but never carried out: 409 (locked) throws ConflictError at once, zero GETs', async () => {
    const nova = await startNova();
    const client = clientFor(nova, { token: `member:${nova.projectId}` }); // admin tokens bypass locks, as in Nova
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    nova.lock(id);
    const err = await settle(client.deleteServer(id, { wait: true, ...FAST }).catch((e: unknown) => e));
    expect(err).toBeInstanceOf(ConflictError);
    expect((err as ConflictError).status).toBe(409);
    expect((err as ConflictError).serverId).toBe(id);
    expect((err as ConflictError).requestId).toMatch(/^req-/);
    expect(nova.requestsTo('DELETE', serverPath(id))).toHaveLength(1);
    expect(nova.requestsTo('GET', serverPath(id))).toHaveLength(0);
  });

  it('The wait loop that hangs or gives up early: without wait, DELETE 500 is retried (bounded), then DeleteFailedError with zero GETs', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    nova.inject({ method: 'DELETE', path: SERVER_PATH, status: 500, body: { computeFault: { code: 500, message: 'Unexpected API Error.' } }, times: Infinity });
    const err = await settle(client.deleteServer(id, { ...FAST, deleteRetries: 3 }).catch((e: unknown) => e));
    expect(err).toBeInstanceOf(DeleteFailedError);
    expect(err).toMatchObject({ serverId: id, deleteAttempts: 4, status: 500, faultMessage: 'Unexpected API Error.' });
    expect(nova.requestsTo('DELETE', serverPath(id))).toHaveLength(4);
    expect(nova.requestsTo('GET', serverPath(id))).toHaveLength(0);
    expect(client.unconfirmedDeletes()).toMatchObject([{ serverId: id, state: 'failed' }]);
  });

  it('with wait, a DELETE that keeps answering 500 is no final failure while the server exists: looked at, sent again with backoff, until timeoutMs', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    nova.inject({ method: 'DELETE', path: SERVER_PATH, status: 500, body: { computeFault: { code: 500, message: 'Unexpected API Error.' } }, times: Infinity });
    const err = await settle(client.deleteServer(id, { wait: true, intervalMs: 100, jitter: 0, timeoutMs: 2000, deleteRetries: 1 }).catch((e: unknown) => e));
    expect(err).toBeInstanceOf(DeleteTimeoutError);
    expect(nova.requestsTo('DELETE', serverPath(id)).length).toBeGreaterThan(2);
    expect(nova.requestsTo('GET', serverPath(id)).length).toBeGreaterThan(0);
    expect(nova.getServerState(id)?.status).toBe('ACTIVE');
    expect(client.unconfirmedDeletes()).toMatchObject([{ serverId: id, state: 'failed' }]);
  });

  it('with wait, a DELETE answered 200 with a proxy page is sent again and the server ends deleted (nothing left behind)', async () => {
    const nova = await startNova({ deleteDelayMs: 10 });
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    nova.inject({ method: 'DELETE', path: SERVER_PATH, status: 200, body: '<html><body>OK</body></html>', headers: { 'content-type': 'text/html' } });
    const r = await settle(client.deleteServer(id, { wait: true, intervalMs: 100, jitter: 0, timeoutMs: 5000 }));
    expect(r).toMatchObject({ outcome: 'deleted' });
    expect(nova.requestsTo('DELETE', serverPath(id)).map((q) => q.status)).toEqual([200, 204]);
    expect(nova.getServerState(id)).toBeUndefined();
  });

  it("with wait, a DELETE answering 500 for a server Nova has in fact deleted (a race) ends deleted at the look's 404", async () => {
    const nova = await startNova({ deleteDelayMs: 0 });
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    // The DELETE reaches Nova, which deletes the server, but the answer is a 500.
    nova.inject({ method: 'DELETE', path: SERVER_PATH, status: 500, body: { computeFault: { code: 500, message: 'Unexpected API Error.' } }, times: Infinity });
    nova.destroyServer(id);
    const r = await settle(client.deleteServer(id, { wait: true, intervalMs: 100, jitter: 0, timeoutMs: 5000, deleteRetries: 0 }));
    expect(r).toMatchObject({ outcome: 'deleted' });
    expect(nova.requestsTo('GET', serverPath(id)).at(-1)?.status).toBe(404);
    expect(client.unconfirmedDeletes()).toEqual([]);
  });

  it('DELETE 503 once, then 204: retried and waited for', async () => {
    const nova = await startNova({ deleteDelayMs: 20 });
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    nova.inject({ method: 'DELETE', path: SERVER_PATH, status: 503, body: { computeFault: { code: 503, message: 'busy' } } });
    const r = await settle(client.deleteServer(id, { wait: true, ...FAST }));
    expect(r).toMatchObject({ outcome: 'deleted', deleteAttempts: 2 });
  });

  it('A DELETE accepted but never carried out: no sign of deletion within redeleteAfterMs re-issues the DELETE exactly once', async () => {
    const nova = await startNova({ deleteDelayMs: 20 });
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    nova.setServerBehavior(id, { onDelete: 'ignore' });
    const r = await settle(client.deleteServer(id, { wait: true, ...FAST, redeleteAfterMs: 40 }));
    expect(r.outcome).toBe('deleted');
    expect(r.deleteAttempts).toBe(2);
    expect(nova.requestsTo('DELETE', serverPath(id))).toHaveLength(2);
    const del2 = nova.requestsTo('DELETE', serverPath(id))[1]!;
    const del1 = nova.requestsTo('DELETE', serverPath(id))[0]!;
    expect(del2.timeMs - del1.timeMs).toBeGreaterThanOrEqual(35);
  });

  it('A DELETE accepted but never carried out (control): a poll showing task_state deleting means no second DELETE', async () => {
    const nova = await startNova({ deleteDelayMs: 120 });
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    const r = await settle(client.deleteServer(id, { wait: true, ...FAST, redeleteAfterMs: 30 }));
    expect(r.outcome).toBe('deleted');
    expect(nova.requestsTo('DELETE', serverPath(id))).toHaveLength(1);
  });

  it('The wait loop that hangs or gives up early: a server stuck in deleting throws DeleteTimeoutError with the last state', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    nova.setServerBehavior(id, { onDelete: 'never' });
    const err = await settle(client.deleteServer(id, { wait: true, ...FAST, timeoutMs: 80 }).catch((e: unknown) => e));
    expect(err).toBeInstanceOf(DeleteTimeoutError);
    expect(err).toMatchObject({ serverId: id, lastStatus: 'ACTIVE', lastTaskState: 'deleting', timeoutMs: 80 });
    expect((err as DeleteTimeoutError).polls).toBeGreaterThanOrEqual(2);
    expect((err as DeleteTimeoutError).elapsedMs).toBeGreaterThanOrEqual(75);
  });

  it('a delete that fails into ERROR is re-issued once, then succeeds', async () => {
    const nova = await startNova({ deleteDelayMs: 10 });
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    nova.setServerBehavior(id, { onDelete: 'error' });
    const r = await settle(client.deleteServer(id, { wait: true, ...FAST }));
    expect(r).toMatchObject({ outcome: 'deleted', deleteAttempts: 2 });
  });

  it('ERROR twice: DeleteFailedError carrying Nova\'s fault message', async () => {
    const nova = await startNova({ deleteDelayMs: 10 });
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    nova.setDefaultDeleteBehavior('error');
    const err = await settle(client.deleteServer(id, { wait: true, ...FAST }).catch((e: unknown) => e));
    expect(err).toBeInstanceOf(DeleteFailedError);
    const e = err as DeleteFailedError;
    expect(e.serverId).toBe(id);
    expect(e.deleteAttempts).toBe(2);
    expect(e.lastStatus).toBe('ERROR');
    expect(e.faultMessage).toBe(nova.getServerState(id)?.faultMessage);
    expect(e.faultMessage).toBeTruthy();
  });

  it('Soft-delete clouds: forceSoftDeleted force-deletes a SOFT_DELETED server and waits for 404', async () => {
    const nova = await startNova({ softDelete: true });
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    const r = await settle(client.deleteServer(id, { wait: true, ...FAST, forceSoftDeleted: true }));
    expect(r.outcome).toBe('deleted');
    const actions = nova.requestsTo('POST', `/servers/${id}/action`);
    expect(actions).toHaveLength(1);
    expect(nova.getServerState(id)).toBeUndefined();
  });

  it('Soft-delete clouds: a SOFT_DELETED server being force-deleted (task_state deleting) is waited for, not force-deleted again', async () => {
    const nova = await startNova({ softDelete: true, deleteDelayMs: 60 });
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    const r = await settle(client.deleteServer(id, { wait: true, ...FAST, forceSoftDeleted: true }));
    expect(r.outcome).toBe('deleted');
    expect(nova.requestsTo('POST', `/servers/${id}/action`)).toHaveLength(1);
    expect(nova.getServerState(id)).toBeUndefined();
  });

  it('Soft-delete clouds (variant): a 403 on force-delete resolves soft-deleted with a warning', async () => {
    const nova = await startNova({ softDelete: true });
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    nova.inject({
      method: 'POST',
      path: /\/action$/,
      status: 403,
      body: { forbidden: { code: 403, message: "Policy doesn't allow os_compute_api:os-deferred-delete:force to be performed." } },
    });
    const r: DeleteServerResult = await settle(client.deleteServer(id, { wait: true, ...FAST, forceSoftDeleted: true }));
    expect(r.outcome).toBe('soft-deleted');
    expect(r.warnings).toHaveLength(1);
    expect(r.warnings[0]).toContain('os-deferred-delete:force');
  });

  it('Soft-delete clouds: without forceSoftDeleted a SOFT_DELETED server resolves soft-deleted after one poll', async () => {
    const nova = await startNova({ softDelete: true });
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE', flavorId: '2' }).id;
    const r = await settle(client.deleteServer(id, { wait: true, ...FAST }));
    expect(r).toMatchObject({ outcome: 'soft-deleted', polls: 1 });
    expect((await client.getLimits()).absolute.totalCoresUsed).toBe(0);
  });

  it('rejects bad input before any request', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    await expect(settle(client.deleteServer(''))).rejects.toBeInstanceOf(ValidationError);
    await expect(settle(client.deleteServer('a/b'))).rejects.toBeInstanceOf(ValidationError);
    await expect(settle(client.deleteServer('x', { redeleteAfterMs: -5 }))).rejects.toBeInstanceOf(ValidationError);
    await expect(settle(client.deleteServer('x', { deleteRetries: 1.5 }))).rejects.toBeInstanceOf(ValidationError);
    await expect(settle(client.deleteServers(['ok', '']))).rejects.toBeInstanceOf(ValidationError);
    expect(nova.requests).toHaveLength(0);
  });
});

describe('a 404 that does not name the server is not "gone" (wrong endpoint, proxy)', () => {
  it('deleteServer against the unversioned root fails instead of reporting already-gone', async () => {
    const nova = await startNova();
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    const client = clientFor(nova, { endpoint: nova.url }); // missing /v2.1
    const err = await settle(client.deleteServer(id, { wait: true, ...FAST }).catch((e: unknown) => e));
    expect(err).toBeInstanceOf(DeleteFailedError);
    expect((err as DeleteFailedError).status).toBe(404);
    expect(nova.getServerState(id)?.status).toBe('ACTIVE');
    expect(client.unconfirmedDeletes().map((u) => u.serverId)).toEqual([id]);
  });

  it('a poll answered by a generic 404 ends the wait with that error, not as deleted', async () => {
    const nova = await startNova({ deleteDelayMs: 5000 });
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    nova.inject({ method: 'GET', path: SERVER_PATH, status: 404, body: { itemNotFound: { code: 404, message: 'The resource could not be found.' } } });
    const err = await settle(client.deleteServer(id, { wait: true, ...FAST }).catch((e: unknown) => e));
    expect(err).toBeInstanceOf(NotFoundError);
    expect((err as NotFoundError).message).toBe('The resource could not be found.');
  });
});

describe('client.unconfirmedDeletes: nothing is forgotten', () => {
  it('keeps a server whose wait timed out, with the error, until a later call confirms it', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const stuck = nova.addServer({ status: 'ACTIVE' }).id;
    const fine = nova.addServer({ status: 'ACTIVE' }).id;
    nova.setServerBehavior(stuck, { onDelete: 'never' });
    await expect(settle(client.deleteServer(stuck, { wait: true, ...FAST, timeoutMs: 40 }))).rejects.toBeInstanceOf(DeleteTimeoutError);
    await settle(client.deleteServer(fine, { wait: true, ...FAST }));
    const left = client.unconfirmedDeletes();
    expect(left).toHaveLength(1);
    expect(left[0]).toMatchObject({ serverId: stuck, calls: 1, state: 'failed' });
    expect(left[0]!.lastError).toMatch(/^DeleteTimeoutError: Timed out/);
    nova.setServerBehavior(stuck, { onDelete: 'normal' });
    const r = await settle(client.deleteServer(stuck, { wait: true, ...FAST }));
    expect(r.outcome).toBe('deleted');
    expect(client.unconfirmedDeletes()).toEqual([]);
  });

  it('a delete without wait stays unconfirmed; already-gone is confirmed', async () => {
    const nova = await startNova({ deleteDelayMs: 5000 });
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    await settle(client.deleteServer(id));
    await settle(client.deleteServer('9011e000-0000-4000-8000-000000000000'));
    expect(client.unconfirmedDeletes().map((u) => [u.serverId, u.state])).toEqual([[id, 'delete-requested']]);
  });

  it('bad input never enters the ledger', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    await expect(settle(client.deleteServer('a/b'))).rejects.toBeInstanceOf(ValidationError);
    expect(client.unconfirmedDeletes()).toEqual([]);
  });
});

describe('client.deleteServers', () => {
  it('Servers stuck in deleting: each settles on its own; a stuck one times out without hiding the others', async () => {
    const nova = await startNova({ deleteDelayMs: 20 });
    const client = clientFor(nova);
    const stuck = nova.addServer({ status: 'ACTIVE' }).id;
    const slow = nova.addServer({ status: 'ACTIVE' }).id;
    const fast = nova.addServer({ status: 'ACTIVE' }).id;
    nova.setServerBehavior(stuck, { onDelete: 'never' });
    const t0 = performance.now();
    const r = await settle(client.deleteServers([stuck, slow, fast, fast], { wait: true, ...FAST, timeoutMs: 150 }));
    const took = performance.now() - t0;
    expect(r.succeeded.sort()).toEqual([slow, fast].sort());
    expect(r.failed).toHaveLength(1);
    expect(r.failed[0]!.serverId).toBe(stuck);
    expect(r.failed[0]!.error).toBeInstanceOf(DeleteTimeoutError);
    expect(r.results.map((x) => x.serverId)).toEqual([stuck, slow, fast]);
    // The batch settles when its stuck server times out, not later.
    expect(took).toBe(150);
  });

  it('bounded concurrency: never more DELETEs in flight than asked', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const ids = Array.from({ length: 6 }, () => nova.addServer({ status: 'ACTIVE' }).id);
    nova.inject({ method: 'DELETE', path: SERVER_PATH, delayMs: 30, times: Infinity });
    const t0 = performance.now();
    const r = await settle(client.deleteServers(ids, { concurrency: 2 }));
    expect(r.succeeded).toHaveLength(6);
    // Six 30 ms DELETEs two at a time: three waves.
    expect(performance.now() - t0).toBe(90);
  });
});
