/**
 * Deletes that cannot end are said so: a server whose instance mapping lost its cell (FakeNova
 * `causes.breakMapping`: listed, counted, its own GET and DELETE answer 404) is never `already-gone`
 * or `deleted`; every delete function fails with OrphanedServerError carrying the orphan-mapping
 * finding, and the server stays unconfirmed. A normal delete sends no extra request. Fake timers.
 */
import { describe, expect, it } from 'vitest';
import { DeleteFailedError, DeleteTimeoutError, OrphanedServerError, waitForDelete } from '../../src/index.js';
import type { RecordedRequest } from '../../src/testing/index.js';
import { T0, clientFor, rejection, serverPath, settle, startNova, useFakeClock } from '../helpers.js';

useFakeClock();

const FAST = { intervalMs: 100, jitter: 0, timeoutMs: 10_000 } as const;
const line = (q: RecordedRequest): string => `${q.timeMs - T0} ${q.method} ${q.path} ${q.status}`;

function expectOrphan(e: Error, id: string): void {
  expect(e).toBeInstanceOf(OrphanedServerError);
  expect(e).toBeInstanceOf(DeleteFailedError);
  const o = e as OrphanedServerError;
  expect(o.serverId).toBe(id);
  expect(o.finding).toMatchObject({ kind: 'orphan-mapping', transient: false, serverIds: [id] });
  expect(o.finding.operatorCan).toContain('nova-manage cell_v2');
  expect(o.message).toContain(`Server ${id} cannot be deleted`);
  expect(o.message).toContain('still shows it');
}

describe('an orphaned mapping (listed, counted, its GET answers 404)', () => {
  it('deleteServer without wait: OrphanedServerError after the DELETE 404 and one listing; the server stays unconfirmed', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    nova.causes.breakMapping(id);
    const e = await rejection(settle(client.deleteServer(id)));
    expectOrphan(e, id);
    expect((e as OrphanedServerError).deleteAttempts).toBe(1);
    expect(nova.requests.map(line)).toEqual([`0 DELETE ${serverPath(id)} 404`, '0 GET /servers 200']);
    expect(client.unconfirmedDeletes()).toMatchObject([{ serverId: id, state: 'failed', lastError: expect.stringContaining('OrphanedServerError') }]);
  });

  it('deleteServer with wait: the same, never already-gone', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    nova.causes.breakMapping(id);
    expectOrphan(await rejection(settle(client.deleteServer(id, { wait: true, ...FAST }))), id);
    expect(client.unconfirmedDeletes().map((u) => u.serverId)).toEqual([id]);
  });

  it('waitForDelete: its GET 404 is checked by one listing, which still shows it: OrphanedServerError', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    nova.causes.breakMapping(id);
    expectOrphan(await rejection(settle(waitForDelete(client, id, FAST))), id);
    expect(nova.requests.map(line)).toEqual([`0 GET ${serverPath(id)} 404`, '0 GET /servers 200']);
  });

  it('waitForDelete of a server really gone: the listing confirms the 404, deleted', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const id = '11111111-aaaa-4bbb-8ccc-0000000000aa';
    expect(await settle(waitForDelete(client, id, FAST))).toMatchObject({ outcome: 'deleted', polls: 1 });
    expect(nova.requests.map(line)).toEqual([`0 GET ${serverPath(id)} 404`, '0 GET /servers 200']);
  });

  it('deleteServers: the orphan fails with OrphanedServerError, the others are deleted', async () => {
    const nova = await startNova({ deleteDelayMs: 300, deletedWindowMs: 0 });
    const client = clientFor(nova);
    const [a, b, orphan] = [1, 2, 3].map(() => nova.addServer({ status: 'ACTIVE' }).id) as [string, string, string];
    nova.causes.breakMapping(orphan);
    const r = await settle(client.deleteServers([a, orphan, b], { wait: true, ...FAST }));
    expect(r.succeeded).toEqual([a, b]);
    expect(r.results.filter((x) => x.status === 'fulfilled').map((x) => x.value.outcome)).toEqual(['deleted', 'deleted']);
    expect(r.failed.map((f) => f.serverId)).toEqual([orphan]);
    expectOrphan(r.failed[0]!.error, orphan);
    expect(client.unconfirmedDeletes().map((u) => u.serverId)).toEqual([orphan]);
  });

  it('a mapping lost mid-delete: listed by the shared listings, then its own GET answers 404 while Nova still lists it: OrphanedServerError', async () => {
    const nova = await startNova({ deleteDelayMs: 300, deletedWindowMs: 0 });
    const client = clientFor(nova);
    const [a, b] = [1, 2].map(() => nova.addServer({ status: 'ACTIVE' }).id) as [string, string];
    nova.setServerBehavior(a, { onDelete: 'never' });
    const p = settle(client.deleteServers([a, b], { wait: true, ...FAST }));
    // Once both are listed under way, a's mapping loses its cell; b is deleted and a is waited for alone.
    await settle(new Promise((r) => setTimeout(r, 150)));
    nova.causes.breakMapping(a);
    const r = await p;
    expect(r.succeeded).toEqual([b]);
    expectOrphan(r.failed[0]!.error, a);
    // Its GET's 404 was checked by a listing (not taken as deleted), and it stays unconfirmed.
    const gets = nova.requests.filter((q) => q.method === 'GET' && q.path === serverPath(a));
    expect(gets.at(-1)!.status).toBe(404);
    expect(nova.requests.filter((q) => q.method === 'GET' && q.path === '/servers').at(-1)!.timeMs).toBe(gets.at(-1)!.timeMs);
    expect(client.unconfirmedDeletes().map((u) => u.serverId)).toEqual([a]);
  });
});

describe('the checking listing', () => {
  it('fails once: the 404 is not taken as gone until a later listing confirms it (already-gone after the second listing)', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const id = '11111111-aaaa-4bbb-8ccc-0000000000bb';
    nova.inject({ method: 'GET', path: '/servers', status: 403, times: 1 });
    expect(await settle(client.deleteServer(id))).toMatchObject({ outcome: 'already-gone' });
    // Formerly the failed listing let the 404 stand (already-gone with no second listing).
    const lines = nova.requests.map(line);
    expect(lines.slice(0, 2)).toEqual([`0 DELETE ${serverPath(id)} 404`, '0 GET /servers 403']);
    expect(lines).toHaveLength(3);
    // The second listing after p-retry's backoff from intervalMs (5000 ms, randomized up to x2).
    expect(lines[2]).toMatch(/^\d+ GET \/servers 200$/);
    const at = Number(lines[2]!.split(' ')[0]);
    expect(at).toBeGreaterThanOrEqual(5000);
    expect(at).toBeLessThan(10_000);
  });

  it('hangs: the call ends at its timeoutMs with DeleteTimeoutError, the server unconfirmed', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    nova.causes.breakMapping(id);
    nova.inject({ method: 'GET', path: '/servers', hang: true, times: 1 });
    const e = await rejection(settle(client.deleteServer(id, { timeoutMs: 500 })));
    expect(e).toBeInstanceOf(DeleteTimeoutError);
    expect(client.deleteEngine.idle).toBe(true);
    expect(client.unconfirmedDeletes().map((u) => u.serverId)).toEqual([id]);
  });
});

describe('a normal delete sends nothing more', () => {
  it('deleteServer with wait: DELETE 204, GETs, the 404: no listing', async () => {
    const nova = await startNova({ deleteDelayMs: 250, deletedWindowMs: 0 });
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    expect(await settle(client.deleteServer(id, { wait: true, ...FAST }))).toMatchObject({ outcome: 'deleted' });
    expect(nova.requests.filter((q) => q.path === '/servers')).toEqual([]);
    expect(nova.requests.map(line)).toEqual([
      `0 DELETE ${serverPath(id)} 204`,
      `0 GET ${serverPath(id)} 200`,
      `100 GET ${serverPath(id)} 200`,
      `200 GET ${serverPath(id)} 200`,
      `300 GET ${serverPath(id)} 404`,
    ]);
  });
});
