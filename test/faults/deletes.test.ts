/**
 * Fault matrix, deletes: `deleteServer` (with and without wait), `waitForDelete` and
 * `deleteServers` against every fault of the matrix, on the DELETE and on the looks of the wait, on
 * fake timers through FakeNova's in-process adapter (README "Delete and wait"). Besides the outcome,
 * every cell checks the promise: no "deleted" or "already-gone" while FakeNova still has the server,
 * a server whose deletion is not confirmed stays in `unconfirmedDeletes()`, the call settles by its
 * deadline, and no timer and no request is left after it.
 */
import { describe, expect, it } from 'vitest';
import { NotFoundError, waitForDelete, type DeleteServerResult, type NovaClient, type WaitForDeleteResult } from '../../src/index.js';
import type { FakeNova } from '../../src/testing/index.js';
import { settle, startNova, useFakeClock } from '../helpers.js';
import { FAULT_NAMES, GARBLED, TRANSIENT, inject, matrixClient, outcomeClass, runCell, type FaultName, type Settled } from './support.js';

useFakeClock();

/** Options of the wait: fast looks, a small deadline. */
const WAIT_ONLY = { intervalMs: 20, jitter: 0, timeoutMs: 3000 } as const;
/** Options of `deleteServer`: no re-DELETE either (so a lost answer cannot hide behind a second DELETE). */
const WAIT = { ...WAIT_ONLY, redeleteAfterMs: 0 } as const;
/** Every cell settles by this (fake ms). */
const DEADLINE_MS = WAIT.timeoutMs;

/** The documented outcome of a DELETE that meets `fault` once (`ok` = the call goes on as if Nova had answered 204). */
function expectedDelete(fault: FaultName, wait = false): string {
  if (TRANSIENT.includes(fault)) return 'ok';
  if (fault === '401 twice') return 'AuthError';
  // "DELETE 2xx other than 204 (a proxy's page)": never taken as accepted. Without wait,
  // DeleteFailedError; with wait, the server is looked at and the DELETE sent again: deleted.
  if (GARBLED.includes(fault)) return wait ? 'ok' : 'DeleteFailedError';
  // "a 404 that is not Nova's answer for this server ... never taken as gone": the DELETE failed
  // (`DeleteFailedError`, its cause the proxy's `NotFoundError`), never 'already-gone'.
  if (fault === 'proxy 404') return 'DeleteFailedError';
  throw new Error(`no expectation for ${fault}`);
}

/** The documented outcome of a look (GET of the server during the wait) that meets `fault` once. */
function expectedLook(fault: FaultName): string {
  // "GET 5xx, reset, request timeout, 429: a failed look: looked at again on the next tick".
  if (TRANSIENT.includes(fault)) return 'ok';
  // "a failure no later look can mend (401 after re-authentication, 403)".
  if (fault === '401 twice') return 'AuthError';
  // A body Nova never sends: the client's InvalidResponseError, never taken as gone.
  if (GARBLED.includes(fault)) return 'InvalidResponseError';
  if (fault === 'proxy 404') return 'NotFoundError';
  throw new Error(`no expectation for ${fault}`);
}

/** A fake whose deletes take 100 ms (so a look meets the server still there) and one ACTIVE server. */
async function setup(): Promise<{ nova: FakeNova; client: NovaClient; id: string }> {
  const nova = await startNova({ deleteDelayMs: 100 });
  const id = nova.addServer({ name: 'ci-1' }).id;
  return { nova, client: matrixClient(nova), id };
}

/** The promise, whatever the outcome: no false "gone", nothing unconfirmed forgotten. */
function checkPromise(nova: FakeNova, client: NovaClient, id: string, s: Settled<DeleteServerResult>): void {
  const unconfirmed = client.unconfirmedDeletes().map((u) => u.serverId);
  if (s.ok && (s.value.outcome === 'deleted' || s.value.outcome === 'already-gone')) {
    expect(nova.getServerState(id), `outcome ${s.value.outcome} but FakeNova still has the server`).toBeUndefined();
    expect(unconfirmed).not.toContain(id);
  } else {
    expect(unconfirmed, 'an unconfirmed delete stays in unconfirmedDeletes()').toContain(id);
  }
}

const DELETE_CELLS = FAULT_NAMES.map((fault) => ({ fault, outcome: expectedDelete(fault) }));
const DELETE_WAIT_CELLS = FAULT_NAMES.map((fault) => ({ fault, outcome: expectedDelete(fault, true) }));
const LOOK_CELLS = FAULT_NAMES.map((fault) => ({ fault, outcome: expectedLook(fault) }));

describe('fault matrix: deleteServer without wait, fault on the DELETE', () => {
  it.each(DELETE_CELLS)('$fault → $outcome', async ({ fault, outcome }) => {
    const { nova, client, id } = await setup();
    inject(nova, fault, 'DELETE', `/servers/${id}`);
    const s = await runCell(nova, client.deleteServer(id, { ...WAIT, wait: false }), DEADLINE_MS);
    expect(outcomeClass(s)).toBe(outcome);
    if (s.ok) expect(s.value.outcome).toBe('delete-requested');
    checkPromise(nova, client, id, s);
    if (outcome !== 'ok') expect(nova.getServerState(id)?.taskState ?? null).toBeNull();
    if (fault === 'proxy 404' && !s.ok) expect(s.error.cause).toBeInstanceOf(NotFoundError);
  });
});

describe('fault matrix: deleteServer with wait, fault on the DELETE', () => {
  it.each(DELETE_WAIT_CELLS)('$fault → $outcome', async ({ fault, outcome }) => {
    const { nova, client, id } = await setup();
    inject(nova, fault, 'DELETE', `/servers/${id}`);
    const s = await runCell(nova, client.deleteServer(id, { ...WAIT, wait: true }), DEADLINE_MS);
    expect(outcomeClass(s)).toBe(outcome);
    if (s.ok) expect(s.value.outcome).toBe('deleted');
    checkPromise(nova, client, id, s);
  });
});

describe('fault matrix: deleteServer with wait, fault on a look', () => {
  it.each(LOOK_CELLS)('$fault → $outcome', async ({ fault, outcome }) => {
    const { nova, client, id } = await setup();
    inject(nova, fault, 'GET', `/servers/${id}`);
    const s = await runCell(nova, client.deleteServer(id, { ...WAIT, wait: true }), DEADLINE_MS);
    expect(outcomeClass(s)).toBe(outcome);
    if (s.ok) expect(s.value.outcome).toBe('deleted');
    checkPromise(nova, client, id, s);
    // The fault met a look while the server was still there; a failed look is followed by another.
    expect(nova.requestsTo('GET', `/servers/${id}`).length).toBeGreaterThanOrEqual(outcome === 'ok' ? 2 : 1);
  });
});

describe('fault matrix: waitForDelete, fault on a look', () => {
  it.each(LOOK_CELLS)('$fault → $outcome', async ({ fault, outcome }) => {
    const { nova, client, id } = await setup();
    await runCell(nova, client.requestDelete(id), 1000);
    inject(nova, fault, 'GET', `/servers/${id}`);
    const s = await runCell<WaitForDeleteResult>(nova, waitForDelete(client, id, WAIT_ONLY), DEADLINE_MS);
    expect(outcomeClass(s)).toBe(outcome);
    if (s.ok) expect(s.value.outcome).toBe('deleted');
    if (s.ok && s.value.outcome === 'deleted') expect(nova.getServerState(id)).toBeUndefined();
  });
});

describe('fault matrix: deleteServers with wait, fault on the first server’s DELETE', () => {
  it.each(DELETE_WAIT_CELLS)('$fault → $outcome for that server, the other deleted', async ({ fault, outcome }) => {
    const { nova, client, id } = await setup();
    const other = nova.addServer({ name: 'ci-2' }).id;
    inject(nova, fault, 'DELETE', `/servers/${id}`);
    const s = await runCell(nova, client.deleteServers([id, other], { ...WAIT, wait: true, concurrency: 2 }), DEADLINE_MS);
    expect(s.ok, 'deleteServers resolves (allSettled)').toBe(true);
    if (!s.ok) return;
    const [first, second] = s.value.results;
    expect(second).toMatchObject({ serverId: other, status: 'fulfilled', value: { outcome: 'deleted' } });
    expect(nova.getServerState(other)).toBeUndefined();
    expect(first!.status === 'fulfilled' ? 'ok' : first!.reason.constructor.name).toBe(outcome);
    if (first!.status === 'fulfilled') {
      expect(first!.value.outcome).toBe('deleted');
      expect(nova.getServerState(id)).toBeUndefined();
    } else {
      expect(client.unconfirmedDeletes().map((u) => u.serverId)).toEqual([id]);
    }
  });
});

/** How a front (proxy, cache, page size) cuts the brief listing `GET /servers` after the first, with no next link. */
const PARTIAL_CELLS = [
  { cut: 'drops 1 of 6', keep: (ids: readonly string[], all: readonly string[]) => ids.filter((x) => x !== all[2]) },
  { cut: 'keeps 1 of 6', keep: (ids: readonly string[], all: readonly string[]) => ids.filter((x) => x === all[0]) },
  { cut: 'first page only (3 of 6)', keep: (ids: readonly string[]) => ids.slice(0, 3) },
] as const;

describe('fault matrix: waitForDelete on 6 servers, the brief listing (GET /servers) cut in front of Nova', () => {
  it.each(PARTIAL_CELLS)('$cut → every wait deleted, none before FakeNova destroyed its server, all by the deadline', async ({ keep }) => {
    const nova = await startNova({ deleteDelayMs: 1000 });
    const ids = Array.from({ length: 6 }, (_, k) => nova.addServer({ name: `ci-${k}` }).id);
    let briefs = 0;
    const adapter: typeof nova.adapter = async (config) => {
      const res = await nova.adapter(config);
      const path = new URL(config.url ?? '', config.baseURL ?? nova.endpoint).pathname.replace(/^\/v2\.1/, '');
      if ((config.method ?? 'get').toUpperCase() !== 'GET' || path !== '/servers' || res.status !== 200 || ++briefs === 1) return res;
      const body = JSON.parse(typeof res.data === 'string' ? res.data : JSON.stringify(res.data)) as { servers: Array<{ id: string }> };
      const kept = new Set(keep(body.servers.map((s) => s.id), ids));
      return { ...res, data: JSON.stringify({ servers: body.servers.filter((s) => kept.has(s.id)) }) };
    };
    const client = matrixClient(nova, { adapter });
    for (const id of ids) await settle(client.requestDelete(id));
    const early: string[] = [];
    const waits = ids.map((id) =>
      waitForDelete(client, id, WAIT_ONLY).then((r) => {
        if (r.outcome === 'deleted' && nova.getServerState(id) !== undefined) early.push(id);
        return r.outcome;
      }),
    );
    const s = await runCell(nova, Promise.all(waits), DEADLINE_MS);
    expect(early, 'deleted while FakeNova still had the server').toEqual([]);
    expect(briefs).toBeGreaterThan(1);
    expect(s.ok && s.value).toEqual(ids.map(() => 'deleted'));
    for (const id of ids) expect(nova.getServerState(id)).toBeUndefined();
  });
});
