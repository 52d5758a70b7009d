/**
 * The delete path against a hostile cloud and a careless caller, on fake timers: odd 404 bodies,
 * endless listings, odd timeouts. Each test asserts the promise: never `deleted` without Nova's
 * 404 naming the server, every call settled by its deadline, nothing left running.
 */
import { describe, expect, it, vi } from 'vitest';
import { AbortError, DeleteFailedError, DeleteTimeoutError, NotFoundError, waitForDelete } from '../../src/index.js';
import { systemClock } from '../../src/core/clock.js';
import { T0, hostileSetup, reply, run, useHostileClock } from './support/hostile.js';


useHostileClock();

describe('a 404 is gone only when it is Nova itemNotFound naming this very server', () => {
  it.each([
    ['another id that contains this one', { itemNotFound: { code: 404, message: 'Instance abcabcab-0000-4000-8000-000000000abcd could not be found.' } }],
    ['an id this one is the start of, after a dot', { itemNotFound: { code: 404, message: 'Instance abcabcab-0000-4000-8000-000000000abc.d could not be found.' } }],
    ['no message (the made-up one quotes the URL)', { itemNotFound: { code: 404 } }],
  ])('GET answering itemNotFound with %s is a failed look, never deleted', async (_what, body) => {
    const { nova, client, front } = hostileSetup();
    nova.add('abcabcab-0000-4000-8000-000000000abc', {});
    await client.requestDelete('abcabcab-0000-4000-8000-000000000abc');
    front.override = ({ config, method, path }) => (method === 'GET' && path === '/servers/abcabcab-0000-4000-8000-000000000abc' ? reply(config, 404, body) : undefined);
    const r = await run(waitForDelete(client, 'abcabcab-0000-4000-8000-000000000abc', { intervalMs: 1000, timeoutMs: 5000 }));
    expect(r.error).toBeInstanceOf(NotFoundError);
    expect(r.value).toBeUndefined();
  });

  it('a DELETE answered with itemNotFound naming another id is not already-gone; the server stays unconfirmed', async () => {
    const { nova, client, front } = hostileSetup();
    nova.add('abcabcab-0000-4000-8000-000000000abc', {});
    front.override = ({ config, method }) => (method === 'DELETE' ? reply(config, 404, { itemNotFound: { code: 404, message: 'Instance abcabcab-0000-4000-8000-000000000abcd could not be found.' } }) : undefined);
    const r = await run(client.deleteServer('abcabcab-0000-4000-8000-000000000abc', { wait: true, intervalMs: 1000, timeoutMs: 5000 }));
    expect(r.error).toBeInstanceOf(DeleteFailedError);
    expect(client.unconfirmedDeletes()).toMatchObject([{ serverId: 'abcabcab-0000-4000-8000-000000000abc', state: 'failed' }]);
  });

  it("Nova's own message still counts, for ids in upper case or without dashes too", async () => {
    const { nova, client } = hostileSetup();
    for (const id of ['abcabcab-0000-4000-8000-000000000abc', 'ABCABCAB-0000-4000-8000-000000000ABC', 'abcabcab00004000800000000000aaaa']) {
      nova.add(id, { goneAfterMs: 0 });
      await client.requestDelete(id);
      const r = await run(waitForDelete(client, id, { intervalMs: 1000, timeoutMs: 5000 }));
      expect(r.value).toMatchObject({ outcome: 'deleted', lastStatus: 'NOT_FOUND' });
    }
  });
});

describe('listings that never end', () => {
  it('a listing whose next link brings a new marker for ever is a failed listing: the servers get their own GETs and end deleted', async () => {
    const { nova, client, front } = hostileSetup({ requestTimeoutMs: 2000 });
    let pages = 0;
    front.override = ({ config, method, path }) => {
      if (method !== 'GET' || (path !== '/servers' && path !== '/servers/detail')) return undefined;
      pages++;
      const body = { servers: [{ id: `other-${pages}`, status: 'ACTIVE' }], servers_links: [{ rel: 'next', href: `http://nova.test/v2.1${path}?marker=m${pages}` }] };
      return new Promise((resolve) => setTimeout(() => resolve(reply(config, 200, body)), 100));
    };
    const ids = ['00000001-0000-4000-8000-000000000000', '00000002-0000-4000-8000-000000000000', '00000003-0000-4000-8000-000000000000'];
    for (const id of ids) {
      nova.add(id, { deletedAfterMs: 500, goneAfterMs: 1500 });
      await client.requestDelete(id);
    }
    const results = await Promise.all(ids.map((id) => run(waitForDelete(client, id, { intervalMs: 1000, timeoutMs: 20_000, jitter: 0 }))));
    for (const r of results) {
      expect(r.value).toMatchObject({ outcome: 'deleted', lastStatus: 'NOT_FOUND' });
      // The listing is cut at its limit (the interval, at least 1 s) and the servers looked at one by one.
      expect(r.settledAt).toBeLessThanOrEqual(5000);
    }
    for (const [i, id] of ids.entries()) expect(nova.goneAt(id)! - T0).toBeLessThanOrEqual(results[i]!.settledAt);
    expect(client.deleteEngine.stats.listingFailures).toBeGreaterThan(0);
    const count = nova.seen.length + pages;
    await vi.advanceTimersByTimeAsync(30_000);
    expect(nova.seen.length + pages).toBe(count);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('evidence about the right servers only', () => {
  const ID = (i: number): string => `${String(i).padStart(8, '0')}-0000-4000-8000-0000000000a1`;
  const OTHER = (i: number): string => `${String(i).padStart(8, '0')}-0000-4000-8000-0000000000f0`;

  it.each([
    ["another project's servers (a misrouted cache or proxy)", () => ({ servers: [1, 2, 3].map((i) => ({ id: OTHER(i), links: [] })) })],
    ['none of the servers it listed a moment ago, one unknown server instead', () => ({ servers: [{ id: OTHER(9), links: [] }] })],
  ])('a brief listing that shows %s proves no absence: every wait ends deleted only at its own 404', async (_what, body) => {
    const { nova, client, front } = hostileSetup({ requestTimeoutMs: 2000 });
    const ids = [1, 2, 3, 4].map(ID);
    for (const id of ids) nova.add(id, { deletedAfterMs: 500, goneAfterMs: 8000 });
    for (const id of ids) await client.requestDelete(id);
    // Honest listings until 3 s (every server listed, DELETED), then the brief listing goes wrong.
    front.override = ({ config, method, path }) => (method === 'GET' && path === '/servers' && Date.now() - T0 >= 3000 ? reply(config, 200, body()) : undefined);
    const results = await Promise.all(ids.map((id) => run(waitForDelete(client, id, { intervalMs: 1000, confirmIntervalMs: 500, jitter: 0, timeoutMs: 20_000 }))));
    for (const r of results) {
      expect(r.value).toMatchObject({ outcome: 'deleted' });
      expect(r.settledAt, 'deleted before Nova destroyed it').toBeGreaterThanOrEqual(8000);
    }
    // Each was confirmed by its own 404.
    for (const id of ids) expect(nova.seen.filter((q) => q.method === 'GET' && q.serverId === id && q.status === 404).length).toBeGreaterThanOrEqual(1);
  });

  it('a changes-since listing with a server of another project (tenant_id) is a failed listing: counted so, the servers answered by their own GETs', async () => {
    const { nova, client, front } = hostileSetup();
    const ids = [1, 2, 3].map(ID);
    for (const id of ids) nova.add(id, { goneAfterMs: 2500 });
    for (const id of ids) await client.requestDelete(id);
    front.override = ({ config, method, path }) =>
      method === 'GET' && path === '/servers/detail' ? reply(config, 200, { servers: [{ id: OTHER(1), status: 'ACTIVE', tenant_id: 'someone-else', updated: new Date().toISOString() }] }) : undefined;
    const results = await Promise.all(ids.map((id) => run(waitForDelete(client, id, { intervalMs: 1000, jitter: 0, timeoutMs: 20_000 }))));
    for (const r of results) expect(r.value).toMatchObject({ outcome: 'deleted' });
    for (const r of results) expect(r.settledAt).toBeGreaterThanOrEqual(2500);
    expect(client.deleteEngine.stats.listingFailures).toBeGreaterThanOrEqual(1);
  });

  it('a listing that drops every pending server at once while a bystander stays listed proves nothing by itself: one GET each, its 404 ends the wait', async () => {
    const { nova, client } = hostileSetup();
    nova.add(OTHER(7), {}); // a server of the project nobody deletes
    const ids = [1, 2, 3].map(ID);
    for (const id of ids) nova.add(id, { deletedAfterMs: 500, goneAfterMs: 1500 });
    for (const id of ids) await client.requestDelete(id);
    const results = await Promise.all(ids.map((id) => run(waitForDelete(client, id, { intervalMs: 1000, confirmIntervalMs: 500, jitter: 0 }))));
    for (const r of results) expect(r.value).toMatchObject({ outcome: 'deleted' });
    // Absence is never proof (it used to end these waits with no GET): one GET a server, Nova's 404.
    const single = nova.seen.filter((q) => q.method === 'GET' && q.serverId !== undefined);
    expect(single.map((q) => q.serverId).sort()).toEqual(ids);
    expect(single.every((q) => q.status === 404)).toBe(true);
  });
});

describe('odd durations', () => {
  it('timeoutMs: Infinity with a look in flight asks for no timer of Infinity (Node would fire it after 1 ms, a busy loop)', async () => {
    const delays: number[] = [];
    let recording = false;
    const clock = { ...systemClock, setTimeout: (fn: () => void, ms: number) => (recording && delays.push(ms), systemClock.setTimeout(fn, ms)) };
    const { nova, client } = hostileSetup({ requestTimeoutMs: 5000, clock });
    nova.add('00000001-0000-4000-8000-000000000000', {});
    await client.requestDelete('00000001-0000-4000-8000-000000000000');
    nova.fault = ({ method }) => (method === 'GET' ? { kind: 'hang' } : undefined);
    const controller = new AbortController();
    const p = waitForDelete(client, '00000001-0000-4000-8000-000000000000', { intervalMs: 1000, timeoutMs: Number.POSITIVE_INFINITY, signal: controller.signal });
    await vi.advanceTimersByTimeAsync(100);
    recording = true;
    await vi.advanceTimersByTimeAsync(1000);
    recording = false;
    expect(delays.filter((d) => !Number.isFinite(d))).toEqual([]);
    expect(delays.length).toBeLessThanOrEqual(2);
    controller.abort(new Error('stop'));
    const r = await run(p);
    expect(r.error).toBeInstanceOf(AbortError);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('the ledger of unconfirmed deletes and its one event', () => {
  it('a deleteServer without wait, then a waitForDelete that sees the 404: the server leaves the ledger, one event', async () => {
    const { nova, client } = hostileSetup();
    nova.add('00000001-0000-4000-8000-000000000000', { goneAfterMs: 500 });
    const events: string[] = [];
    client.deleteEngine.ledger.onConfirmed((id) => events.push(id));
    await run(client.deleteServer('00000001-0000-4000-8000-000000000000'));
    expect(client.unconfirmedDeletes()).toMatchObject([{ serverId: '00000001-0000-4000-8000-000000000000', state: 'delete-requested' }]);
    const r = await run(waitForDelete(client, '00000001-0000-4000-8000-000000000000', { intervalMs: 1000, jitter: 0 }));
    expect(r.value).toMatchObject({ outcome: 'deleted' });
    expect(client.unconfirmedDeletes()).toEqual([]);
    expect(events).toEqual(['00000001-0000-4000-8000-000000000000']);
  });

  it('two deleteServer calls for the same id at once: one deletion confirmed, one event, nothing left', async () => {
    const { nova, client } = hostileSetup();
    nova.add('00000001-0000-4000-8000-000000000000', { deletedAfterMs: 300, goneAfterMs: 1500 });
    const events: string[] = [];
    client.deleteEngine.ledger.onConfirmed((id) => events.push(id));
    const [a, b] = await Promise.all([
      run(client.deleteServer('00000001-0000-4000-8000-000000000000', { wait: true, intervalMs: 1000, jitter: 0 })),
      run(client.deleteServer('00000001-0000-4000-8000-000000000000', { wait: true, intervalMs: 1000, jitter: 0 })),
    ]);
    expect(a.value).toMatchObject({ outcome: 'deleted' });
    expect(b.value).toMatchObject({ outcome: 'deleted' });
    expect(events).toEqual(['00000001-0000-4000-8000-000000000000']);
    expect(client.unconfirmedDeletes()).toEqual([]);
  });
});

describe('deleteServers: the batch barrier', () => {
  it('one DELETE that hangs does not hold the waits of the servers already accepted', async () => {
    const { nova, client } = hostileSetup({ requestTimeoutMs: 30_000 });
    const ids = ['00000001-0000-4000-8000-000000000000', '00000002-0000-4000-8000-000000000000', '00000003-0000-4000-8000-000000000000', '00000004-0000-4000-8000-000000000000', '00000005-0000-4000-8000-000000000000'];
    for (const id of ids) nova.add(id, { deletedAfterMs: 200, goneAfterMs: 1000 });
    nova.fault = ({ method, serverId }) => (method === 'DELETE' && serverId === '00000005-0000-4000-8000-000000000000' ? { kind: 'hang' } : undefined);
    const r = await run(client.deleteServers(ids, { wait: true, intervalMs: 1000, timeoutMs: 20_000, jitter: 0 }));
    expect(r.value?.succeeded).toEqual(['00000001-0000-4000-8000-000000000000', '00000002-0000-4000-8000-000000000000', '00000003-0000-4000-8000-000000000000', '00000004-0000-4000-8000-000000000000']);
    for (const x of r.value!.results.slice(0, 4)) expect(x).toMatchObject({ status: 'fulfilled', value: { outcome: 'deleted' } });
    expect(r.value?.failed.map((f) => [f.serverId, f.error.name])).toEqual([['00000005-0000-4000-8000-000000000000', 'DeleteTimeoutError']]);
    // The waits started one interval after the last answered DELETE, not at s5's deadline.
    const firstLook = Math.min(...nova.seen.filter((q) => q.method === 'GET').map((q) => q.at - T0));
    expect(firstLook).toBeGreaterThanOrEqual(1000);
    expect(firstLook).toBeLessThan(1100);
    expect(r.settledAt).toBe(20_000);
    expect(client.unconfirmedDeletes()).toMatchObject([{ serverId: '00000005-0000-4000-8000-000000000000', state: 'failed' }]);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('deleteServers: the batch barrier on a Nova that answers each DELETE slowly', () => {
  it('no look goes out while the batch\'s DELETEs are still being answered a second apart (none could see a 404)', async () => {
    const { nova, client } = hostileSetup({ requestTimeoutMs: 30_000 });
    const ids = ['00000001-0000-4000-8000-000000000000', '00000002-0000-4000-8000-000000000000', '00000003-0000-4000-8000-000000000000', '00000004-0000-4000-8000-000000000000', '00000005-0000-4000-8000-000000000000', '00000006-0000-4000-8000-000000000000'];
    for (const id of ids) nova.add(id, { deletedAfterMs: 200, goneAfterMs: 8000 });
    // Every DELETE is answered after 900 ms: with the engine's DELETE window, answers come 900 ms
    // apart, more than the 500 ms interval.
    nova.fault = ({ method }) => (method === 'DELETE' ? { kind: 'delay', ms: 900 } : undefined);
    const r = await run(client.deleteServers(ids, { wait: true, intervalMs: 500, timeoutMs: 60_000, jitter: 0 }));
    expect(r.value?.succeeded).toEqual(ids);
    const deletesDone = Math.max(...nova.seen.filter((q) => q.method === 'DELETE').map((q) => q.at - T0)) + 900;
    const firstLook = Math.min(...nova.seen.filter((q) => q.method === 'GET').map((q) => q.at - T0));
    // Before: the waits started 500 ms after an answer, while 4 DELETEs were still unanswered.
    expect(firstLook).toBeGreaterThanOrEqual(deletesDone);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('deleteServers: the first round and the barrier under faults', () => {
  const ids = [1, 2, 3, 4].map((i) => `0000000${i}-0000-4000-8000-000000000000`);

  it('a DELETE answered 204 and lost by Nova (the server stays ACTIVE) in a batch whose first round is one whole listing: sent again after redeleteAfterMs, deleted only at its 404', async () => {
    const { nova, client, front } = hostileSetup({ requestTimeoutMs: 5000 });
    for (const id of ids) nova.add(id, { deletedAfterMs: 300, goneAfterMs: 2000 });
    let lost = 0;
    // The first DELETE of the second server is answered by a proxy and never reaches Nova.
    front.override = ({ config, method, path }) => (method === 'DELETE' && path === `/servers/${ids[1]}` && lost++ === 0 ? reply(config, 204, '') : undefined);
    const r = await run(client.deleteServers(ids, { wait: true, intervalMs: 1000, redeleteAfterMs: 3000, timeoutMs: 60_000, jitter: 0 }));
    expect(r.value?.succeeded).toEqual(ids);
    const lostOne = r.value!.results[1]!;
    expect(lostOne.status === 'fulfilled' && lostOne.value.deleteAttempts).toBe(2);
    for (const id of ids) expect(nova.goneAt(id)! - T0).toBeLessThanOrEqual(r.settledAt);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a DELETE that hangs after slow ones: the accepted servers are waited for (the barrier at most 4 intervals after the last answer), the hung one times out at its deadline, nothing left running', async () => {
    const { nova, client } = hostileSetup({ requestTimeoutMs: 30_000 });
    for (const id of ids) nova.add(id, { deletedAfterMs: 300, goneAfterMs: 2000 });
    let n = 0;
    nova.fault = ({ method }) => (method === 'DELETE' ? (n++ < 3 ? { kind: 'delay', ms: 1500 } : { kind: 'hang' }) : undefined);
    const r = await run(client.deleteServers(ids, { wait: true, intervalMs: 500, timeoutMs: 10_000, jitter: 0, concurrency: 1 }));
    expect(r.value?.succeeded).toEqual(ids.slice(0, 3));
    expect(r.value?.failed.map((f) => [f.serverId, f.error.name])).toEqual([[ids[3], 'DeleteTimeoutError']]);
    expect(r.settledAt).toBeLessThanOrEqual(10_000);
    // The waits started 2 x the slowest DELETE (1.5 s) after the last answer (4.5 s), not later.
    const firstLook = Math.min(...nova.seen.filter((q) => q.method === 'GET').map((q) => q.at - T0));
    expect(firstLook).toBeGreaterThanOrEqual(4500);
    expect(firstLook).toBeLessThanOrEqual(4500 + 4 * 500 + 10);
    for (const id of r.value!.succeeded) expect(nova.goneAt(id)! - T0).toBeLessThanOrEqual(r.settledAt);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(vi.getTimerCount()).toBe(0);
  });

  it.each([12_000, 15_000])('a batch whose timeoutMs (%i ms) ends before the barrier would: the accepted servers are still looked at, one interval before their deadline, and end deleted', async (timeoutMs) => {
    const { nova, client } = hostileSetup({ requestTimeoutMs: 60_000 });
    for (const id of ids) nova.add(id, { deletedAfterMs: 300, goneAfterMs: 1000 });
    let n = 0;
    // DELETEs answered 3 s apart, the last one never: the barrier would hold the waits until 2 x 3 s
    // after the last answer (15 s), or for ever with no answer at all; the calls end at timeoutMs.
    nova.fault = ({ method }) => (method === 'DELETE' ? (n++ < 3 ? { kind: 'delay', ms: 3000 } : { kind: 'hang' }) : undefined);
    const r = await run(client.deleteServers(ids, { wait: true, timeoutMs, jitter: 0, concurrency: 1 }));
    expect(r.value?.succeeded).toEqual(ids.slice(0, 3));
    expect(r.value?.failed.map((f) => [f.serverId, f.error.name])).toEqual([[ids[3], 'DeleteTimeoutError']]);
    for (const id of r.value!.succeeded) expect(nova.goneAt(id)! - T0).toBeLessThanOrEqual(r.settledAt);
    expect(r.settledAt).toBeLessThanOrEqual(timeoutMs);
    await vi.advanceTimersByTimeAsync(120_000);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('the rate limit never holds a call past its deadline or its abort', () => {
  it('deleteServer calls queued behind the rate limit settle at timeoutMs, and their queued DELETEs are never sent', async () => {
    const { nova, client } = hostileSetup({ maxRequestsPerSecond: 1 });
    const ids = ['00000001-0000-4000-8000-000000000000', '00000002-0000-4000-8000-000000000000', '00000003-0000-4000-8000-000000000000', '00000004-0000-4000-8000-000000000000', '00000005-0000-4000-8000-000000000000', '00000006-0000-4000-8000-000000000000'];
    for (const id of ids) nova.add(id, { goneAfterMs: 100 });
    const results = await Promise.all(ids.map((id) => run(client.deleteServer(id, { wait: true, timeoutMs: 1500, intervalMs: 1000 }))));
    for (const r of results) {
      expect(r.error).toBeInstanceOf(DeleteTimeoutError);
      expect(r.settledAt).toBe(1500);
    }
    await vi.advanceTimersByTimeAsync(60_000);
    expect(nova.seen.every((q) => q.at - T0 <= 1500)).toBe(true);
    expect(client.unconfirmedDeletes().map((u) => u.state)).toEqual(ids.map(() => 'failed'));
  });

  it('an abort settles every call queued behind the rate limit at once', async () => {
    const { nova, client } = hostileSetup({ maxRequestsPerSecond: 1 });
    const ids = ['00000001-0000-4000-8000-000000000000', '00000002-0000-4000-8000-000000000000', '00000003-0000-4000-8000-000000000000', '00000004-0000-4000-8000-000000000000'];
    for (const id of ids) nova.add(id, { goneAfterMs: 100 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('stop')), 300);
    const results = await Promise.all(ids.map((id) => run(client.deleteServer(id, { wait: true, intervalMs: 1000, signal: controller.signal }))));
    for (const r of results) {
      expect(r.error).toBeInstanceOf(AbortError);
      expect(r.settledAt).toBe(300);
    }
    await vi.advanceTimersByTimeAsync(60_000);
    expect(nova.seen.map((q) => `${q.at - T0} ${q.method} ${q.path}`)).toEqual(['0 DELETE /servers/00000001-0000-4000-8000-000000000000']);
  });
});
