/**
 * A 404 that the orphaned-mapping check could not check (its listing fails: 503, no answer, a garbled
 * body) confirms nothing: an orphan (FakeNova `causes.breakMapping`: listed, counted, its GET and
 * DELETE answer 404) is never `already-gone` or `deleted` then; the check is repeated until the
 * call's deadline, which ends it as a timeout, the server unconfirmed. A listing that later succeeds
 * without the server confirms it. Fake timers.
 */
import { describe, expect, it } from 'vitest';
import { DeleteTimeoutError, OrphanedServerError, waitForDelete } from '../../src/index.js';
import type { FakeNova, FaultSpec } from '../../src/testing/index.js';
import { T0, clientFor, rejection, serverPath, settle, startNova, useFakeClock } from '../helpers.js';

useFakeClock();

const FAST = { intervalMs: 100, jitter: 0, timeoutMs: 2000 } as const;
const LISTING = /^\/servers(\/detail)?$/;
const FAULTS: Record<string, Omit<FaultSpec, 'path'>> = {
  '503': { status: 503 },
  'no answer': { hang: true },
  'a garbled body': { status: 200, body: '{"servers": [', headers: { 'Content-Type': 'application/json' } },
};

/** An orphan on a Nova whose listings all fail with `fault` (a listing with no answer ends at the client's requestTimeoutMs). */
async function orphanUnlistable(fault: Omit<FaultSpec, 'path'>): Promise<{ nova: FakeNova; id: string }> {
  const nova = await startNova({ deletedWindowMs: 0 });
  const id = nova.addServer({ status: 'ACTIVE' }).id;
  nova.causes.breakMapping(id);
  nova.inject({ method: 'GET', path: LISTING, times: 1000, ...fault });
  return { nova, id };
}

const listings = (nova: FakeNova): number[] => nova.requests.filter((q) => q.method === 'GET' && LISTING.test(q.path)).map((q) => q.timeMs - T0);

/** Nova still lists and counts the server. */
function stillThere(nova: FakeNova, id: string): void {
  expect(nova.listServerStates().map((s) => s.id)).toContain(id);
  expect(nova.reportedUsage().instances).toBeGreaterThanOrEqual(1);
}

describe.each(Object.entries(FAULTS))('the checking listing fails (%s)', (_name, fault) => {
  it('deleteServer with wait: DeleteTimeoutError at timeoutMs, never already-gone; checked again meanwhile; unconfirmed', async () => {
    const { nova, id } = await orphanUnlistable(fault);
    const client = clientFor(nova, { requestTimeoutMs: 300 });
    const e = await rejection(settle(client.deleteServer(id, { wait: true, ...FAST })));
    expect(e).toBeInstanceOf(DeleteTimeoutError);
    expect((e as DeleteTimeoutError).elapsedMs).toBe(2000);
    expect(listings(nova).length).toBeGreaterThanOrEqual(2);
    expect(client.unconfirmedDeletes().map((u) => u.serverId)).toEqual([id]);
    expect(client.deleteEngine.idle).toBe(true);
    stillThere(nova, id);
  });

  it('deleteServer without wait: DeleteTimeoutError at timeoutMs (an unchecked 404 is no answer), unconfirmed', async () => {
    const { nova, id } = await orphanUnlistable(fault);
    const client = clientFor(nova);
    const e = await rejection(settle(client.deleteServer(id, { intervalMs: 100, timeoutMs: 2000 })));
    expect(e).toBeInstanceOf(DeleteTimeoutError);
    expect(client.unconfirmedDeletes().map((u) => u.serverId)).toEqual([id]);
    stillThere(nova, id);
  });

  it('deleteServers: the orphan fails with DeleteTimeoutError, a normal server beside it is deleted', async () => {
    const { nova, id } = await orphanUnlistable(fault);
    const other = nova.addServer({ status: 'ACTIVE' }).id;
    const client = clientFor(nova);
    const r = await settle(client.deleteServers([id, other], { wait: true, ...FAST }));
    expect(r.succeeded).toEqual([other]);
    expect(r.failed.map((f) => f.serverId)).toEqual([id]);
    expect(r.failed[0]!.error).toBeInstanceOf(DeleteTimeoutError);
    expect(client.unconfirmedDeletes().map((u) => u.serverId)).toEqual([id]);
    stillThere(nova, id);
  });

  it('waitForDelete: outcome timeout, never deleted; every interval its GET (404) and the check again', async () => {
    const { nova, id } = await orphanUnlistable(fault);
    const client = clientFor(nova, { requestTimeoutMs: 300 });
    const r = await settle(waitForDelete(client, id, FAST));
    expect(r).toMatchObject({ outcome: 'timeout' });
    const gets = nova.requests.filter((q) => q.path === serverPath(id));
    expect(gets.length).toBeGreaterThanOrEqual(2);
    expect(gets.every((q) => q.status === 404)).toBe(true);
    expect(listings(nova).length).toBeGreaterThanOrEqual(2);
    stillThere(nova, id);
  });

  it('client.requestDelete: DeleteTimeoutError within requestTimeoutMs, never already-gone', async () => {
    const { nova, id } = await orphanUnlistable(fault);
    const client = clientFor(nova, { requestTimeoutMs: 3000 });
    const e = await rejection(settle(client.requestDelete(id)));
    expect(e).toBeInstanceOf(DeleteTimeoutError);
    expect(e).toMatchObject({ serverId: id, lastStatus: 'NOT_FOUND', timeoutMs: 3000 });
    expect(client.deleteEngine.idle).toBe(true);
    stillThere(nova, id);
  });
});

describe('the checking listing fails, then succeeds without the server', () => {
  it('waitForDelete of a server really gone: deleted once a listing confirms the 404, exact schedule', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const id = '11111111-aaaa-4bbb-8ccc-0000000000cc';
    nova.inject({ method: 'GET', path: LISTING, status: 503, times: 2 });
    expect(await settle(waitForDelete(client, id, FAST))).toMatchObject({ outcome: 'deleted' });
    const line = (q: { timeMs: number; method: string; path: string; status: number }): string => `${q.timeMs - T0} ${q.method} ${q.path} ${q.status}`;
    // A 503 widens the interval (pollPace.ts): the next looks come 200 ms, then 300 ms later (a healthy 404 narrowed it by half an interval before the second 503 doubled it).
    expect(nova.requests.map(line)).toEqual([
      `0 GET ${serverPath(id)} 404`,
      '0 GET /servers 503',
      `200 GET ${serverPath(id)} 404`,
      '200 GET /servers 503',
      `500 GET ${serverPath(id)} 404`,
      '500 GET /servers 200',
    ]);
  });

  it('deleteServer without wait: already-gone after the listing that succeeds', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const id = '11111111-aaaa-4bbb-8ccc-0000000000dd';
    nova.inject({ method: 'GET', path: LISTING, status: 503, times: 2 });
    expect(await settle(client.deleteServer(id, { intervalMs: 100 }))).toMatchObject({ outcome: 'already-gone' });
    expect(nova.requests.filter((q) => q.path === '/servers').map((q) => q.status)).toEqual([503, 503, 200]);
    expect(client.unconfirmedDeletes()).toEqual([]);
  });

  it('client.requestDelete: already-gone after the listing that succeeds', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const id = '11111111-aaaa-4bbb-8ccc-0000000000ee';
    nova.inject({ method: 'GET', path: LISTING, status: 503, times: 1 });
    expect(await settle(client.requestDelete(id))).toBe('already-gone');
    expect(nova.requests.filter((q) => q.path === '/servers').map((q) => q.status)).toEqual([503, 200]);
  });
});

describe('client.requestDelete', () => {
  it('an orphan: OrphanedServerError, not already-gone', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    nova.causes.breakMapping(id);
    const e = await rejection(settle(client.requestDelete(id)));
    expect(e).toBeInstanceOf(OrphanedServerError);
    expect(e).toMatchObject({ serverId: id, deleteAttempts: 1 });
  });

  it('an accepted DELETE: delete-requested, the DELETE is the only request', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    expect(await settle(client.requestDelete(id))).toBe('delete-requested');
    expect(nova.requests.map((q) => `${q.method} ${q.path} ${q.status}`)).toEqual([`DELETE ${serverPath(id)} 204`]);
  });
});
