/**
 * The delete engine on fake timers: which request goes out at which time, and what each answer
 * means. A scripted Nova answers through an axios adapter under a real NovaClient.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AbortError, DeleteTimeoutError, InvalidResponseError, NotFoundError, NovaClient, waitForDelete, type NovaClientOptions } from '../../src/index.js';
import { systemClock } from '../../src/core/clock.js';
import { ScriptedNova, type Seen } from './support/scriptedNova.js';

const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});
afterEach(() => {
  vi.useRealTimers();
});

function setup(options: Partial<NovaClientOptions> = {}): { nova: ScriptedNova; client: NovaClient } {
  const nova = new ScriptedNova();
  const client = new NovaClient({ microversion: '2.1', endpoint: 'http://nova.test/v2.1', token: 'admin:p', adapter: nova.adapter, maxRequestsPerSecond: Number.POSITIVE_INFINITY, ...options });
  return { nova, client };
}

const ids = (n: number): string[] => Array.from({ length: n }, (_, i) => `${String(i + 1).padStart(8, '0')}-0000-4000-8000-000000000000`);
const at = (q: Seen): number => q.at - T0;
const describeSeen = (seen: Seen[]): string[] => seen.map((q) => `${at(q)} ${q.method} ${q.path}${q.query['changes-since'] ? '?changes-since' : ''} ${q.status}`);

/** Settle `p` while advancing the fake clock in steps; returns its outcome and the fake time it settled. */
async function run<T>(p: Promise<T>, maxMs = 600_000): Promise<{ value?: T; error?: unknown; settledAt: number }> {
  let settled: { value?: T; error?: unknown; settledAt: number } | undefined;
  p.then(
    (value) => (settled = { value, settledAt: Date.now() - T0 }),
    (error: unknown) => (settled = { error, settledAt: Date.now() - T0 }),
  );
  for (let t = 0; t < maxMs && !settled; t += 10) await vi.advanceTimersByTimeAsync(10);
  if (!settled) throw new Error('did not settle');
  return settled;
}

describe('one pending wait: its own GET on its own schedule', () => {
  it('looks at 0, then every intervalMs; once DELETED every confirmIntervalMs; deleted at the first 404', async () => {
    const { nova, client } = setup();
    nova.add('00000001-0000-4000-8000-000000000000', { deletedAfterMs: 2500, goneAfterMs: 4200 });
    await client.requestDelete('00000001-0000-4000-8000-000000000000');
    const r = await run(waitForDelete(client, '00000001-0000-4000-8000-000000000000', { intervalMs: 1000, confirmIntervalMs: 300, jitter: 0 }));
    expect(r.value).toMatchObject({ outcome: 'deleted', lastStatus: 'NOT_FOUND' });
    expect(describeSeen(nova.seen)).toEqual([
      '0 DELETE /servers/00000001-0000-4000-8000-000000000000 204',
      '0 GET /servers/00000001-0000-4000-8000-000000000000 200',
      '1000 GET /servers/00000001-0000-4000-8000-000000000000 200',
      '2000 GET /servers/00000001-0000-4000-8000-000000000000 200',
      '3000 GET /servers/00000001-0000-4000-8000-000000000000 200', // DELETED: from now on every 300 ms
      '3300 GET /servers/00000001-0000-4000-8000-000000000000 200',
      '3600 GET /servers/00000001-0000-4000-8000-000000000000 200',
      '3900 GET /servers/00000001-0000-4000-8000-000000000000 200',
      '4200 GET /servers/00000001-0000-4000-8000-000000000000 404',
    ]);
    expect(r.settledAt).toBe(4200);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a stuck server times out exactly at timeoutMs; no request after, no timer left', async () => {
    const { nova, client } = setup();
    nova.add('00000001-0000-4000-8000-000000000000', {});
    await client.requestDelete('00000001-0000-4000-8000-000000000000');
    const r = await run(waitForDelete(client, '00000001-0000-4000-8000-000000000000', { intervalMs: 1000, timeoutMs: 3500, jitter: 0 }));
    expect(r.value).toMatchObject({ outcome: 'timeout', lastStatus: 'ACTIVE', lastTaskState: 'deleting', polls: 4 });
    expect(r.settledAt).toBe(3500);
    const count = nova.seen.length;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(nova.seen.length).toBe(count);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('timeoutMs Infinity asks the clock for no timer it cannot hold (no overflow to 1 ms)', async () => {
    const delays: number[] = [];
    const clock = { ...systemClock, setTimeout: (fn: () => void, ms: number) => (delays.push(ms), systemClock.setTimeout(fn, ms)) };
    const { nova, client } = setup({ clock });
    nova.add('00000001-0000-4000-8000-000000000000', { deletedAfterMs: 1500, goneAfterMs: 2500 });
    await client.requestDelete('00000001-0000-4000-8000-000000000000');
    const r = await run(waitForDelete(client, '00000001-0000-4000-8000-000000000000', { intervalMs: 1000, timeoutMs: Number.POSITIVE_INFINITY, jitter: 0 }));
    expect(r.value).toMatchObject({ outcome: 'deleted' });
    expect(delays.length).toBeGreaterThan(0);
    expect(delays.every((ms) => Number.isFinite(ms) && ms >= 0 && ms <= 2_147_483_647)).toBe(true);
  });

  it('an abort rejects at once and cancels the look in flight', async () => {
    const { nova, client } = setup();
    nova.add('00000001-0000-4000-8000-000000000000', {});
    await client.requestDelete('00000001-0000-4000-8000-000000000000');
    nova.fault = ({ method }) => (method === 'GET' ? { kind: 'hang' } : undefined);
    const controller = new AbortController();
    const p = waitForDelete(client, '00000001-0000-4000-8000-000000000000', { intervalMs: 1000, signal: controller.signal });
    setTimeout(() => controller.abort(new Error('stop')), 250);
    const r = await run(p);
    expect(r.error).toBeInstanceOf(AbortError);
    expect(r.settledAt).toBe(250);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(nova.seen.filter((q) => q.method === 'GET')).toHaveLength(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("a 404 that is not Nova's answer for this server is never deleted", async () => {
    const { nova, client } = setup();
    nova.add('00000001-0000-4000-8000-000000000000', {});
    await client.requestDelete('00000001-0000-4000-8000-000000000000');
    nova.fault = ({ method }) => (method === 'GET' ? { kind: 'proxy404' } : undefined);
    const r = await run(waitForDelete(client, '00000001-0000-4000-8000-000000000000', { intervalMs: 1000 }));
    expect(r.error).toBeInstanceOf(NotFoundError);
    expect(client.deleteEngine.idle).toBe(true);
  });

  it("a 200 with another server's body is a failed look, not an observation of this one", async () => {
    const { nova, client } = setup();
    nova.add('00000001-0000-4000-8000-000000000000', { deletedAfterMs: 0 });
    await client.requestDelete('00000001-0000-4000-8000-000000000000');
    nova.fault = ({ method }) => (method === 'GET' ? { kind: 'otherServer' } : undefined);
    const r = await run(waitForDelete(client, '00000001-0000-4000-8000-000000000000', { intervalMs: 1000 }));
    expect(r.error).toBeInstanceOf(InvalidResponseError);
  });

  it('5xx and resets are failed looks: retried on the next tick, the wait ends deleted', async () => {
    const { nova, client } = setup();
    nova.add('00000001-0000-4000-8000-000000000000', { deletedAfterMs: 1500, goneAfterMs: 2500 });
    await client.requestDelete('00000001-0000-4000-8000-000000000000');
    let n = 0;
    nova.fault = ({ method }) => (method === 'GET' && n++ < 3 ? [{ kind: 'status', status: 500 } as const, { kind: 'reset' } as const, { kind: 'status', status: 503 } as const][n - 1] : undefined);
    const r = await run(waitForDelete(client, '00000001-0000-4000-8000-000000000000', { intervalMs: 1000, jitter: 0, pollRetries: 3 }));
    expect(r.value).toMatchObject({ outcome: 'deleted' });
    expect(r.settledAt).toBeGreaterThanOrEqual(2500);
  });
});

describe('many pending waits: shared listings', () => {
  it('one changes-since listing to see them under way, then one brief listing an interval, and every 3 intervals one whole listing for status and presence at once; the last ones confirmed by their own 404', async () => {
    const { nova, client } = setup();
    for (const id of ids(20)) nova.add(id, { deletedAfterMs: 1200, goneAfterMs: 2600 });
    for (const id of ids(20)) await client.requestDelete(id);
    const waits = ids(20).map((id) => run(waitForDelete(client, id, { intervalMs: 1000, confirmIntervalMs: 500, jitter: 0 })));
    const results = await Promise.all(waits);
    for (const r of results) {
      expect(r.value).toMatchObject({ outcome: 'deleted' });
      expect(r.settledAt).toBe(3000);
    }
    const gets = nova.seen.filter((q) => q.method === 'GET');
    expect(describeSeen(gets.filter((q) => q.serverId === undefined))).toEqual([
      '0 GET /servers/detail?changes-since 200', // all 20 under way (task_state deleting), so present: no brief listing
      '1000 GET /servers 200', // still listed: a look every intervalMs
      '2000 GET /servers 200',
      '3000 GET /servers/detail 200', // status again every 3 intervals, and presence: one listing, empty
    ]);
    // An empty listing proves nothing: each server's own GET shows its 404.
    const single = gets.filter((q) => q.serverId !== undefined);
    expect(single).toHaveLength(20);
    expect(single.every((q) => q.status === 404 && at(q) === 3000)).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a server a listing had and no longer has is not gone by its absence: its absence triggers one GET, and the 404 ends its wait', async () => {
    const { nova, client } = setup();
    nova.add('bystander', {}); // another server of the project, never deleted
    for (const id of ids(6)) nova.add(id, { deletedAfterMs: 500, goneAfterMs: 1500 });
    for (const id of ids(6)) await client.requestDelete(id);
    const results = await Promise.all(ids(6).map((id) => run(waitForDelete(client, id, { intervalMs: 1000, confirmIntervalMs: 500, jitter: 0 }))));
    for (const r of results) expect(r.value).toMatchObject({ outcome: 'deleted', lastStatus: 'NOT_FOUND' });
    // Before absence stopped being proof, no server had a GET of its own: now one each, its 404.
    const single = nova.seen.filter((q) => q.method === 'GET' && q.serverId !== undefined);
    expect(single.map((q) => q.serverId).sort()).toEqual(ids(6).sort());
    expect(single.every((q) => q.status === 404)).toBe(true);
    for (const r of results) expect(r.settledAt).toBeGreaterThanOrEqual(1500);
  });

  it('a listing that fails or hangs is one failed look: every server is answered by its own GET, no wait fails', async () => {
    for (const fault of [{ kind: 'status', status: 503 } as const, { kind: 'hang' } as const]) {
      const { nova, client } = setup({ requestTimeoutMs: 2000 });
      for (const id of ids(5)) nova.add(id, { deletedAfterMs: 500, goneAfterMs: 1500 });
      for (const id of ids(5)) await client.requestDelete(id);
      nova.fault = ({ listing }) => (listing ? fault : undefined);
      const results = await Promise.all(ids(5).map((id) => run(waitForDelete(client, id, { intervalMs: 1000, jitter: 0, pollRetries: 0 }))));
      for (const r of results) expect(r.value).toMatchObject({ outcome: 'deleted' });
      expect(client.deleteEngine.stats.listingFailures).toBeGreaterThan(0);
    }
  });

  it.each([-300_000, -3000, 3000, 300_000])('a Nova clock %i ms off the client ends every wait at its 404 all the same', async (skewMs) => {
    const { nova, client } = setup();
    nova.skewMs = skewMs;
    for (const id of ids(6)) nova.add(id, { deletedAfterMs: 2000, goneAfterMs: 3000 });
    for (const id of ids(6)) await client.requestDelete(id);
    const results = await Promise.all(ids(6).map((id) => run(waitForDelete(client, id, { intervalMs: 1000, jitter: 0 }))));
    for (const r of results) {
      expect(r.value).toMatchObject({ outcome: 'deleted' });
      expect(r.settledAt).toBeLessThanOrEqual(4000);
    }
  });

  it('coalesce: false never lists', async () => {
    const { nova, client } = setup({ coalesce: false });
    for (const id of ids(4)) nova.add(id, { goneAfterMs: 1500 });
    for (const id of ids(4)) await client.requestDelete(id);
    await Promise.all(ids(4).map((id) => run(waitForDelete(client, id, { intervalMs: 1000, jitter: 0 }))));
    expect(nova.seen.filter((q) => q.method === 'GET' && q.serverId === undefined)).toHaveLength(0);
  });
});

describe('the brief listing is asked at microversion 2.69 or later', () => {
  it('a client at 2.1 lists at 2.69 (servers of an unreachable cell are listed, not left out); its other requests stay at 2.1', async () => {
    const { nova, client } = setup({ microversion: '2.1' });
    nova.add('bystander', {});
    for (const id of ids(4)) nova.add(id, { goneAfterMs: 1500 });
    for (const id of ids(4)) await client.requestDelete(id);
    await Promise.all(ids(4).map((id) => run(waitForDelete(client, id, { intervalMs: 1000, jitter: 0 }))));
    const brief = nova.seen.filter((q) => q.method === 'GET' && q.path === '/servers');
    expect(brief.length).toBeGreaterThan(0);
    expect(brief.every((q) => q.microversion === '2.69')).toBe(true);
    expect(nova.seen.filter((q) => q.path !== '/servers').every((q) => q.microversion === '2.1')).toBe(true);
  });

  it('a Nova older than 2.69 (406): the listing goes on at the client microversion and every absence is proved by a GET', async () => {
    const { nova, client } = setup({ microversion: '2.1' });
    nova.maxMicroversionMinor = 65;
    nova.add('bystander', {});
    for (const id of ids(4)) nova.add(id, { goneAfterMs: 1500 });
    for (const id of ids(4)) await client.requestDelete(id);
    const results = await Promise.all(ids(4).map((id) => run(waitForDelete(client, id, { intervalMs: 1000, jitter: 0 }))));
    for (const r of results) expect(r.value).toMatchObject({ outcome: 'deleted' });
    expect(nova.seen.some((q) => q.path === '/servers' && q.status === 406)).toBe(true);
    // Each server's deletion is proved by its own 404.
    for (const id of ids(4)) expect(nova.seen.some((q) => q.serverId === id && q.method === 'GET' && q.status === 404)).toBe(true);
  });
});

describe('a Nova older than 2.69 meets the check of a 404 first (no shared listing before it)', () => {
  const line = (q: Seen): string => `${at(q)} ${q.method} ${q.path} ${q.status} ${q.microversion ?? ''}`;

  // Before: the check's brief listing was asked at 2.69 every time and refused (406) every time, so
  // a 404 that needed its check was never confirmed: the wait ended as a timeout on a server really
  // gone, after a refused listing beside each of its GETs (40 requests in 20 s).
  it('waitForDelete of a server nothing showed: after the 406 the check lists at the client microversion, deleted at once; later checks ask no 2.69', async () => {
    const { nova, client } = setup({ microversion: '2.1' });
    nova.maxMicroversionMinor = 65;
    const [a, b] = ids(2) as [string, string];
    const first = await run(waitForDelete(client, a, { intervalMs: 1000, timeoutMs: 20_000, jitter: 0 }));
    expect(first.value).toMatchObject({ outcome: 'deleted' });
    expect(first.settledAt).toBe(0);
    expect(nova.seen.map(line)).toEqual([`0 GET /servers/${a} 404 2.1`, '0 GET /servers 406 2.69', '0 GET /servers 200 2.1']);
    const second = await run(waitForDelete(client, b, { intervalMs: 1000, timeoutMs: 20_000, jitter: 0 }));
    expect(second.value).toMatchObject({ outcome: 'deleted' });
    expect(nova.seen.slice(3).map((q) => line(q).replace(/^\d+ /, ''))).toEqual([`GET /servers/${b} 404 2.1`, 'GET /servers 200 2.1']);
  });

  it('deleteServer of a server already gone (its DELETE answers 404): already-gone after one refused listing, not a timeout', async () => {
    const { nova, client } = setup({ microversion: '2.1' });
    nova.maxMicroversionMinor = 65;
    const [a] = ids(1) as [string];
    const r = await run(client.deleteServer(a, { wait: true, intervalMs: 1000, timeoutMs: 20_000, jitter: 0 }));
    expect(r.value).toMatchObject({ outcome: 'already-gone' });
    expect(r.settledAt).toBeLessThan(1000);
    expect(nova.seen.filter((q) => q.status === 406)).toHaveLength(1);
    expect(client.unconfirmedDeletes()).toEqual([]);
  });
});

describe('one rate limit for everything the engine sends', () => {
  it('maxRequestsPerSecond bounds DELETEs and looks together in every one-second window', async () => {
    const { nova, client } = setup({ maxRequestsPerSecond: 5, coalesce: false });
    for (const id of ids(12)) nova.add(id, { goneAfterMs: 1000 });
    const r = await run(client.deleteServers(ids(12), { wait: true, intervalMs: 1000, jitter: 0 }));
    expect(r.value?.failed).toEqual([]);
    const times = nova.seen.map(at).sort((a, b) => a - b);
    for (const t of times) expect(times.filter((x) => x >= t && x < t + 1000).length).toBeLessThanOrEqual(5);
  });
});

describe('deleteServers: the DELETEs first, then one wait for all', () => {
  it('sends every DELETE (paced by the rate limit) before the first look, then waits for all together', async () => {
    const { nova, client } = setup({ maxRequestsPerSecond: 10 });
    for (const id of ids(25)) nova.add(id, { deletedAfterMs: 800, goneAfterMs: 2000 });
    nova.add('bystander', {});
    const r = await run(client.deleteServers(ids(25), { wait: true, intervalMs: 1000, jitter: 0 }));
    expect(r.value?.succeeded).toHaveLength(25);
    const deletes = nova.seen.filter((q) => q.method === 'DELETE').map(at);
    const looks = nova.seen.filter((q) => q.method === 'GET').map(at);
    expect(Math.min(...looks)).toBeGreaterThanOrEqual(Math.max(...deletes));
    // 10 a second: 25 DELETEs take 2 s and more.
    expect(Math.max(...deletes)).toBeGreaterThanOrEqual(2000);
    // One changes-since listing, a brief listing a tick, and one GET for each server: its 404 is the
    // only proof (an absence from a listing is none; before that rule, 15 looks in all, most servers
    // ended by their absence). Never more than one GET a server: 25 + 4 listings.
    const single = nova.seen.filter((q) => q.method === 'GET' && q.serverId !== undefined);
    for (const id of ids(25)) expect(single.filter((q) => q.serverId === id).map((q) => q.status)).toEqual([404]);
    expect(looks.length - single.length).toBeLessThanOrEqual(4);
  });
});

describe('deleteServer: timeoutMs bounds the whole call', () => {
  it('a DELETE that hangs ends as DeleteTimeoutError at timeoutMs, and nothing is sent after', async () => {
    const { nova, client } = setup({ requestTimeoutMs: 30_000 });
    nova.add('00000001-0000-4000-8000-000000000000', { goneAfterMs: 100 });
    nova.fault = ({ method }) => (method === 'DELETE' ? { kind: 'hang' } : undefined);
    const r = await run(client.deleteServer('00000001-0000-4000-8000-000000000000', { wait: true, timeoutMs: 500 }));
    expect(r.error).toBeInstanceOf(DeleteTimeoutError);
    expect(r.settledAt).toBe(500);
    await vi.advanceTimersByTimeAsync(120_000);
    expect(nova.seen).toHaveLength(1);
    expect(client.unconfirmedDeletes()).toMatchObject([{ serverId: '00000001-0000-4000-8000-000000000000', state: 'failed' }]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('the re-DELETE of a call that timed out is never sent', async () => {
    const { nova, client } = setup({ maxRequestsPerSecond: 1 });
    nova.add('00000001-0000-4000-8000-000000000000', { ignoresDelete: true }); // 204, then no sign of deletion at all
    const r = await run(client.deleteServer('00000001-0000-4000-8000-000000000000', { wait: true, intervalMs: 1000, timeoutMs: 1500, redeleteAfterMs: 900, jitter: 0 }));
    expect(r.error).toBeInstanceOf(DeleteTimeoutError);
    expect(r.settledAt).toBe(1500);
    await vi.advanceTimersByTimeAsync(60_000);
    // The re-DELETE waited for its turn under the rate limit past the deadline: never sent.
    expect(nova.seen.filter((q) => q.method === 'DELETE')).toHaveLength(1);
    expect(nova.seen.every((q) => at(q) <= 1500)).toBe(true);
  });

  it('with no sign of deletion within redeleteAfterMs the DELETE is sent once more', async () => {
    const { nova, client } = setup();
    nova.add('00000001-0000-4000-8000-000000000000', { ignoresDelete: true });
    const r = await run(client.deleteServer('00000001-0000-4000-8000-000000000000', { wait: true, intervalMs: 1000, timeoutMs: 5500, redeleteAfterMs: 2000, jitter: 0 }));
    expect(r.error).toBeInstanceOf(DeleteTimeoutError);
    expect(nova.seen.filter((q) => q.method === 'DELETE').map(at)).toEqual([0, 2000]);
  });
});
