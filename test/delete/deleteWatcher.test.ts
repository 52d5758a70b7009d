/**
 * Mechanics of coalesced delete-waiting (src/coalesce/deleteWatcher.ts) against FakeNova: O(1)
 * requests per tick, pagination, Nova's clock through a skewing proxy, listing failures, absent
 * servers, abort, timers, the rate cap and the tick interval.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { AuthError, NovaClient, ValidationError, waitForDelete, type WaitForDeleteResult } from '../../src/index.js';
import { deleteWatcherOf, LISTING_RETRY_MS } from '../../src/delete/deleteWatcher.js';
import { CHANGES_SINCE_MARGIN_MS, isoSeconds } from '../../src/delete/novaClock.js';
import type { FakeNova } from '../../src/testing/index.js';
import { clientFor, startNova } from '../helpers.js';

const SERVER_PATH = /^\/servers\/(?!detail$)[^/]+$/;
const LISTING = '/servers/detail';
const NO_CAP = { maxRequestsPerSecond: Number.POSITIVE_INFINITY } as const;

function addServers(nova: FakeNova, n: number): string[] {
  return Array.from({ length: n }, () => nova.addServer({ status: 'ACTIVE' }).id);
}

/** `n` servers whose DELETE was accepted; `stuck` ones stay in task_state deleting. */
async function deleting(nova: FakeNova, client: NovaClient, n: number, stuck = false): Promise<string[]> {
  const ids = addServers(nova, n);
  for (const id of ids) {
    if (stuck) nova.setServerBehavior(id, { onDelete: 'never' });
    await client.requestDelete(id);
  }
  return ids;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('DeleteWatcher: requests per tick', () => {
  it('N pending waits cost one listing per tick and no per-server GET (vs N GETs a poll without coalescing)', async () => {
    const nova = await startNova({ maxTotalInstances: -1, maxTotalCores: -1 });
    const c = clientFor(nova, NO_CAP);
    const ids = await deleting(nova, c, 40, true);
    nova.clearRequests();
    const opts = { intervalMs: 20, jitter: 0, timeoutMs: 250 };
    const r = await Promise.all(ids.map((id) => waitForDelete(c, id, opts)));
    expect(r.every((x) => x.outcome === 'timeout' && x.lastTaskState === 'deleting')).toBe(true);
    const w = deleteWatcherOf(c);
    const listings = nova.requestsTo('GET', LISTING).length;
    // No per-server GET while two or more are pending (at most the last one alone polls its own).
    expect(w.stats.confirmGets + w.stats.fallbackGets).toBe(0);
    expect(nova.requestsTo('GET', SERVER_PATH)).toHaveLength(w.stats.singleGets);
    expect(w.stats.singleGets).toBeLessThanOrEqual(2);
    // One request per tick (a last tick may be cut off when the last waits time out before its listing lands).
    expect(w.stats.ticks).toBe(w.stats.listings + w.stats.singleGets);
    expect(w.stats.listings - listings).toBeGreaterThanOrEqual(0);
    expect(w.stats.listings - listings).toBeLessThanOrEqual(1);
    // ticks every intervalMs / 2 = 10 ms over 250 ms (fewer when a listing of 40 takes longer on a loaded machine)
    expect(listings).toBeGreaterThanOrEqual(4);
    expect(listings).toBeLessThanOrEqual(27);
    for (const q of nova.requestsTo('GET', LISTING)) expect(q.query['changes-since']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

    // Each listing served every pending wait: about 40 observations per request.
    const observations = r.reduce((n, x) => n + x.polls, 0);
    expect(observations).toBeGreaterThanOrEqual(30 * listings);

    const off = clientFor(nova, { coalesce: false });
    await sleep(20); // a listing cut off at the deadline may still land
    nova.clearRequests();
    await Promise.allSettled(ids.map((id) => waitForDelete(off, id, opts)));
    const perServer = nova.requestsTo('GET', SERVER_PATH).length;
    expect(nova.requestsTo('GET', LISTING)).toHaveLength(0);
    // Without coalescing: GET /servers/{id} only (one per server per poll).
    expect(perServer).toBeGreaterThan(0);
  });

  it('a single pending wait polls its own GET /servers/{id}, never a listing', async () => {
    const nova = await startNova({ deleteDelayMs: 40 });
    const c = clientFor(nova);
    const [id] = await deleting(nova, c, 1);
    nova.clearRequests();
    const r = await waitForDelete(c, id!, { intervalMs: 5, jitter: 0 });
    expect(r.outcome).toBe('deleted');
    expect(nova.requestsTo('GET', LISTING)).toHaveLength(0);
    expect(nova.requestsTo('GET', SERVER_PATH)).toHaveLength(r.polls);
    expect(deleteWatcherOf(c).stats.singleGets).toBe(r.polls);
  });

  it('follows the listing\'s pagination (servers_links next, marker)', async () => {
    const nova = await startNova({ pageSize: 4, deleteDelayMs: 60, deletedWindowMs: 0, maxTotalInstances: -1 });
    const c = clientFor(nova, NO_CAP);
    const ids = await deleting(nova, c, 10);
    nova.clearRequests();
    const r = await Promise.all(ids.map((id) => waitForDelete(c, id, { intervalMs: 20, jitter: 0 })));
    expect(r.map((x) => x.outcome)).toEqual(Array(10).fill('deleted'));
    const gets = nova.requestsTo('GET', LISTING);
    const first = gets.filter((q) => q.query.marker === undefined);
    const next = gets.filter((q) => q.query.marker !== undefined);
    expect(first.length).toBeGreaterThanOrEqual(1);
    expect(next).toHaveLength(first.length * 2); // 10 servers in pages of 4, 4, 2
    for (const q of next) expect(q.query['changes-since']).toBe(first[0]!.query['changes-since']);
    const w = deleteWatcherOf(c);
    expect(w.stats.listingPages).toBe(w.stats.listings * 3);
    expect(nova.requestsTo('GET', SERVER_PATH)).toHaveLength(w.stats.singleGets);
  });
});

/** A proxy that shifts Nova's clock by `skewMs`: `Date` headers out, `changes-since` in. */
async function skewProxy(target: string, skewMs: number): Promise<{ endpoint: string; sentSince: string[]; close: () => Promise<void> }> {
  const sentSince: string[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://proxy');
    const since = url.searchParams.get('changes-since');
    if (since !== null) {
      sentSince.push(since);
      url.searchParams.set('changes-since', isoSeconds(Date.parse(since) - skewMs));
    }
    const up = http.request(target + url.pathname + url.search, { method: req.method, headers: req.headers }, (ur) => {
      const headers = { ...ur.headers };
      if (typeof headers.date === 'string') headers.date = new Date(Date.parse(headers.date) + skewMs).toUTCString();
      res.writeHead(ur.statusCode ?? 502, headers);
      ur.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    endpoint: `http://127.0.0.1:${port}/v2.1`,
    sentSince,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

describe('DeleteWatcher: Nova\'s clock', () => {
  it.each([
    ['behind the client by 1 h', -3600_000],
    ['ahead of the client by 1 h', 3600_000],
  ])('changes-since is on Nova\'s clock from its Date header when Nova is %s', async (_label, skewMs) => {
    const nova = await startNova({ deleteDelayMs: 80, maxTotalInstances: -1 });
    const proxy = await skewProxy(nova.url, skewMs);
    try {
      const c = new NovaClient({ endpoint: proxy.endpoint, token: `admin:${nova.projectId}`, maxRequestsPerSecond: Number.POSITIVE_INFINITY });
      const ids = await deleting(nova, c, 6);
      nova.clearRequests();
      const r = await Promise.all(ids.map((id) => waitForDelete(c, id, { intervalMs: 20, jitter: 0 })));
      expect(r.map((x) => x.outcome)).toEqual(Array(6).fill('deleted'));
      const w = deleteWatcherOf(c);
      expect(w.stats.confirmGets).toBe(0);
      expect(nova.requestsTo('GET', SERVER_PATH)).toHaveLength(w.stats.singleGets); // only a last wait left alone
      // Nova behind: the first listing (local clock, no Date seen yet) asked about Nova's future; it is repeated once.
      expect(w.stats.relistings).toBe(skewMs < 0 ? 1 : 0);
      expect(Math.abs(w.novaClockOffsetMs! - skewMs)).toBeLessThan(2000);
      // Every listing after the first used Nova's time of the waits, minus the margin.
      const novaNow = Date.now() + skewMs;
      for (const since of proxy.sentSince.slice(1)) {
        const t = Date.parse(since);
        expect(t).toBeLessThanOrEqual(novaNow - CHANGES_SINCE_MARGIN_MS + 1000);
        expect(t).toBeGreaterThan(novaNow - CHANGES_SINCE_MARGIN_MS - 5000);
      }
    } finally {
      await proxy.close();
    }
  });
});

describe('DeleteWatcher: when the listing cannot answer', () => {
  it.each([
    [403, { forbidden: { code: 403, message: "Policy doesn't allow os_compute_api:servers:detail to be performed." } }],
    [400, { badRequest: { code: 400, message: "Invalid input for query parameters changes-since." } }],
    [500, { computeFault: { code: 500, message: 'Unexpected API Error.' } }],
  ])('a %s on the listing falls back to per-server GETs (and no more listings for a while)', async (status, body) => {
    const nova = await startNova({ deleteDelayMs: 50, deletedWindowMs: 0 });
    const c = clientFor(nova, NO_CAP);
    const ids = await deleting(nova, c, 5);
    nova.clearRequests();
    nova.inject({ method: 'GET', path: LISTING, status, body });
    const r = await Promise.all(ids.map((id) => waitForDelete(c, id, { intervalMs: 10, jitter: 0 })));
    expect(r.map((x) => x.outcome)).toEqual(Array(5).fill('deleted'));
    expect(nova.requestsTo('GET', LISTING)).toHaveLength(1);
    const w = deleteWatcherOf(c);
    expect(w.stats.listingFailures).toBe(1);
    expect(w.stats.fallbackGets).toBeGreaterThanOrEqual(5);
    for (const id of ids) expect(nova.requestsTo('GET', `/servers/${id}`).at(-1)!.status).toBe(404);
    expect(LISTING_RETRY_MS).toBe(60000);
  });

  it('a transient listing failure is delivered to every wait as a failed poll, never as gone, and is retried', async () => {
    const nova = await startNova({ deleteDelayMs: 40 });
    const c = clientFor(nova, NO_CAP);
    const ids = await deleting(nova, c, 4);
    nova.clearRequests();
    nova.inject({ method: 'GET', path: LISTING, status: 503, body: { computeFault: { code: 503, message: 'busy' } }, times: 2 });
    const r = await Promise.all(ids.map((id) => waitForDelete(c, id, { intervalMs: 10, jitter: 0 })));
    expect(r.map((x) => x.outcome)).toEqual(Array(4).fill('deleted'));
    const gets = nova.requestsTo('GET', LISTING);
    expect(gets.slice(0, 2).map((q) => q.status)).toEqual([503, 503]);
    const w = deleteWatcherOf(c);
    expect(w.stats.fallbackGets + w.stats.confirmGets).toBe(0);
    expect(nova.requestsTo('GET', SERVER_PATH)).toHaveLength(w.stats.singleGets);
  });

  it('a 401 on the listing rejects every wait with AuthError (as a 401 on their own GET would)', async () => {
    const nova = await startNova();
    const c = clientFor(nova, NO_CAP);
    const ids = await deleting(nova, c, 3, true);
    nova.inject({ method: 'GET', path: LISTING, status: 401, body: { error: { code: 401, title: 'Unauthorized', message: 'The request you have made requires authentication.' } }, times: 5 });
    const r = await Promise.allSettled(ids.map((id) => waitForDelete(c, id, { intervalMs: 10 })));
    for (const x of r) expect((x as PromiseRejectedResult).reason).toBeInstanceOf(AuthError);
  });

  it('servers absent from the listing are confirmed by one GET each, then taken as unchanged (no request)', async () => {
    const nova = await startNova();
    const c = clientFor(nova, NO_CAP);
    const ids = await deleting(nova, c, 4, true);
    nova.clearRequests();
    nova.inject({ method: 'GET', path: LISTING, status: 200, body: { servers: [] }, times: Infinity });
    const seen: string[][] = ids.map(() => []);
    const r = await Promise.all(
      ids.map((id, i) => waitForDelete(c, id, { intervalMs: 20, jitter: 0, timeoutMs: 150, onProgress: (p) => seen[i]!.push(`${p.status}/${p.taskState}`) })),
    );
    expect(r.map((x) => x.outcome)).toEqual(Array(4).fill('timeout'));
    for (const id of ids) expect(nova.requestsTo('GET', `/servers/${id}`)).toHaveLength(1);
    const w = deleteWatcherOf(c);
    expect(w.stats.confirmGets).toBe(4);
    expect(w.stats.unchanged).toBeGreaterThanOrEqual(4 * 3);
    for (const s of seen) expect(new Set(s)).toEqual(new Set(['ACTIVE/deleting']));
  });

  it('a server once observed and then absent from the listing is taken as unchanged (no GET), until it changes', async () => {
    const nova = await startNova();
    const c = clientFor(nova, NO_CAP);
    const ids = await deleting(nova, c, 3, true);
    const seen: string[] = [];
    const p = Promise.all(
      ids.map((id, i) => waitForDelete(c, id, { intervalMs: 20, jitter: 0, timeoutMs: 3000, onProgress: (q) => i === 0 && seen.push(`${q.status}/${q.taskState}`) })),
    );
    await sleep(60);
    // From now on the listing no longer shows ids[0] (as when T has moved past its last change).
    const others = (await c.listServersWithMeta({ 'changes-since': '2000-01-01T00:00:00Z' })).servers.filter((s) => s.id !== ids[0]);
    nova.clearRequests();
    nova.inject({ method: 'GET', path: LISTING, status: 200, body: { servers: others }, times: Infinity });
    const before = seen.length;
    await sleep(100);
    expect(nova.requestsTo('GET', SERVER_PATH)).toHaveLength(0);
    expect(seen.length).toBeGreaterThan(before);
    expect(new Set(seen)).toEqual(new Set(['ACTIVE/deleting']));
    nova.clearFaults();
    for (const id of ids) nova.destroyServer(id); // a change: the real listing shows them DELETED
    const r: WaitForDeleteResult[] = await p;
    expect(r.map((x) => [x.outcome, x.lastStatus])).toEqual(Array(3).fill(['deleted', 'DELETED']));
  });
});

describe('DeleteWatcher: leaving, timers, rate cap, interval', () => {
  it('a wait that settles or aborts leaves at once; with nothing pending no timer or request remains', async () => {
    const nova = await startNova();
    const c = clientFor(nova, NO_CAP);
    const ids = await deleting(nova, c, 5, true);
    const stuck = await deleting(nova, c, 1, true);
    const w = deleteWatcherOf(c);
    const ac = new AbortController();
    const all = [...ids, ...stuck].map((id, i) => waitForDelete(c, id, { intervalMs: 10, signal: i === 5 ? ac.signal : undefined }).catch((e: unknown) => e));
    await sleep(5);
    expect(w.pendingWaits).toBe(6);
    expect(w.pendingServers).toBe(6);
    for (const id of ids) nova.destroyServer(id);
    const r = await Promise.all(all.slice(0, 5));
    expect(r.map((x) => (x as WaitForDeleteResult).outcome)).toEqual(Array(5).fill('deleted'));
    expect(w.pendingWaits).toBe(1);
    expect(w.idle).toBe(false);
    ac.abort();
    expect((await all[5]) as Error).toMatchObject({ name: 'AbortError' });
    expect(w.pendingWaits).toBe(0);
    expect(w.idle).toBe(true);
    const count = nova.requests.length;
    await sleep(50);
    expect(nova.requests.length).toBe(count);
  });

  it('maxRequestsPerSecond caps a fleet\'s polling (fallback GETs), burst included', async () => {
    const nova = await startNova();
    const c = clientFor(nova, { maxRequestsPerSecond: 20 });
    const ids = await deleting(nova, c, 10, true);
    nova.clearRequests();
    nova.inject({ method: 'GET', path: LISTING, status: 403, body: { forbidden: { code: 403, message: 'Policy does not allow' } } });
    await Promise.all(ids.map((id) => waitForDelete(c, id, { intervalMs: 5, timeoutMs: 400 })));
    const gets = nova.requestsTo('GET', SERVER_PATH).length;
    // 20 (burst) + 20/s x 0.4 s = 28, less the listing's token; without the cap: 10 servers x 80 polls.
    expect(gets).toBeGreaterThanOrEqual(18);
    expect(gets).toBeLessThanOrEqual(28);
  });

  it('maxRequestsPerSecond caps listings too, and never slows a single wait', async () => {
    const nova = await startNova();
    const c = clientFor(nova, { maxRequestsPerSecond: 10, watchIntervalMs: 1 });
    const ids = await deleting(nova, c, 3, true);
    nova.clearRequests();
    await Promise.all(ids.map((id) => waitForDelete(c, id, { intervalMs: 2, timeoutMs: 300 })));
    const listings = nova.requestsTo('GET', LISTING).length;
    expect(listings).toBeGreaterThanOrEqual(10);
    expect(listings).toBeLessThanOrEqual(14); // 10 burst + 10/s x 0.3 s

    nova.clearRequests();
    const single = await waitForDelete(c, ids[0]!, { intervalMs: 5, jitter: 0, timeoutMs: 150 });
    expect(single.polls).toBeGreaterThanOrEqual(5); // the 10/s cap would allow 2 in 150 ms; a loaded machine polls less often than every 5 ms
    // one GET per poll (plus at most one cut off on the wire at the deadline)
    expect(nova.requestsTo('GET', SERVER_PATH).length - single.polls).toBeGreaterThanOrEqual(0);
    expect(nova.requestsTo('GET', SERVER_PATH).length - single.polls).toBeLessThanOrEqual(1);
  });

  it('ticks at half the smallest pending intervalMs by default, or at watchIntervalMs', async () => {
    const nova = await startNova();
    const c = clientFor(nova, NO_CAP);
    const ids = await deleting(nova, c, 3, true);
    nova.clearRequests();
    await Promise.all(ids.map((id, i) => waitForDelete(c, id, { intervalMs: i === 0 ? 40 : 80, jitter: 0, timeoutMs: 300 })));
    const byDefault = nova.requestsTo('GET', LISTING).length;
    expect(byDefault).toBeGreaterThanOrEqual(11); // every 20 ms over 300 ms
    expect(byDefault).toBeLessThanOrEqual(16);

    const slow = clientFor(nova, { ...NO_CAP, watchIntervalMs: 60 });
    nova.clearRequests();
    await Promise.all(ids.map((id) => waitForDelete(slow, id, { intervalMs: 10, jitter: 0, timeoutMs: 300 })));
    const configured = nova.requestsTo('GET', LISTING).length;
    expect(configured).toBeGreaterThanOrEqual(4);
    expect(configured).toBeLessThanOrEqual(6);
  });

  it('coalesce: false never lists; bad client options are rejected before any request', async () => {
    const nova = await startNova({ deleteDelayMs: 20 });
    const off = clientFor(nova, { coalesce: false });
    const ids = await deleting(nova, off, 3);
    await Promise.all(ids.map((id) => waitForDelete(off, id, { intervalMs: 5 })));
    expect(nova.requestsTo('GET', LISTING)).toHaveLength(0);
    expect(() => clientFor(nova, { maxRequestsPerSecond: 0 })).toThrow(ValidationError);
    expect(() => clientFor(nova, { maxRequestsPerSecond: Number.NaN })).toThrow(ValidationError);
    expect(() => clientFor(nova, { watchIntervalMs: -1 })).toThrow(ValidationError);
    expect(() => clientFor(nova, { coalesce: 'yes' as unknown as boolean })).toThrow(ValidationError);
    const c = clientFor(nova);
    expect(c.coalesce).toBe(true);
    expect(c.maxRequestsPerSecond).toBe(10);
    expect(c.watchIntervalMs).toBeUndefined();
  });
});

describe('coalesced 404 confirmation after DELETED (confirmGoneMs)', () => {
  it('many deletions in their DELETED window are confirmed gone by shared listings, not a GET each', async () => {
    const { NovaClient } = await import('../../src/index.js');
    const { FakeNova } = await import('../../src/testing/index.js');
    const nova = await FakeNova.start({ deleteDelayMs: 20, deletedWindowMs: 150, maxTotalInstances: -1, maxTotalCores: -1, maxTotalRAMSize: -1 });
    try {
      const client = new NovaClient({ endpoint: nova.endpoint, token: 'admin:demo', microversion: '2.79', maxRequestsPerSecond: Number.POSITIVE_INFINITY });
      const ids = Array.from({ length: 20 }, () => nova.addServer({ status: 'ACTIVE', flavorId: '1' }).id);
      const r = await client.deleteServers(ids, { wait: true, intervalMs: 10, jitter: 0, concurrency: 20 });
      expect(r.failed).toEqual([]);
      for (const x of r.results) if (x.status === 'fulfilled') expect(x.value.server).toBeUndefined();
      expect(nova.usage()).toEqual({ cores: 0, instances: 0, ram: 0 });
      const plainListings = nova.requests.filter((q) => q.method === 'GET' && q.path === '/servers');
      const ownGets = nova.requests.filter((q) => q.method === 'GET' && /^\/servers\/[^/]+$/.test(q.path) && q.path !== '/servers/detail');
      expect(plainListings.length).toBeGreaterThan(0);
      // without sharing, each of the 20 deletions would make at least one confirming GET after its DELETED
      expect(ownGets.length).toBeLessThan(20);
    } finally {
      await nova.close();
    }
  });
});
