/**
 * The guard's ACTIVE wait reads the client's watcher (its delete engine): concurrent waits on one
 * client are answered by one shared `changes-since` listing a tick instead of a GET each, and share
 * those listings with the client's delete-waits. The watcher's rules of evidence hold for them: a
 * server a listing does not show (a failed listing, a page that never came) is looked at by its own
 * GET, never taken as gone. Fake timers, FakeNova (requests counted).
 */
import { describe, expect, it } from 'vitest';
import { waitForActive, waitForDelete } from '../../src/index.js';
import type { FakeNova } from '../../src/testing/index.js';
import { clientFor, settle, startNova, useFakeClock } from '../helpers.js';
import { body, guardFor } from './fixtures.js';

useFakeClock();

const BUILD_MS = 10_000;

const ownGets = (nova: FakeNova): number => nova.requests.filter((r) => r.method === 'GET' && /^\/servers\/[0-9a-f-]{36}$/.test(r.path)).length;
/** Detail listings: `changes-since`, or the whole project's when a tick wants status and presence at once. */
const statusListings = (nova: FakeNova): number => nova.requests.filter((r) => r.method === 'GET' && r.path === '/servers/detail').length;

describe('the ACTIVE wait reads the client watcher', () => {
  it('5 concurrent guarded creates on one client: one changes-since listing a tick, no per-server GET', async () => {
    const nova = await startNova({ buildDelayMs: BUILD_MS });
    const client = clientFor(nova);
    const guard = guardFor(nova, { activeIntervalMs: 1000, activeTimeoutMs: 60_000, jitter: 0 }, client);
    const servers = await settle(Promise.all([1, 2, 3, 4, 5].map((i) => guard.createServer(body(`ci-${i}`, '1')))));
    expect(servers.map((s) => s.status)).toEqual(['ACTIVE', 'ACTIVE', 'ACTIVE', 'ACTIVE', 'ACTIVE']);
    // main: 5 servers x 11 GETs (one a second for 10 s); now the listings answer all five.
    expect(ownGets(nova)).toBe(0);
    expect(statusListings(nova)).toBe(client.deleteEngine.stats.ticks);
    expect(statusListings(nova)).toBeLessThanOrEqual(2 * (BUILD_MS / 1000 + 1));
    await guard.close();
  });

  it('a delete-wait and ACTIVE waits on the same client share the same listings', async () => {
    const nova = await startNova({ buildDelayMs: BUILD_MS, deleteDelayMs: 3000, deletedWindowMs: 2000 });
    const client = clientFor(nova, { maxRequestsPerSecond: Infinity });
    const building = await settle(Promise.all(['a', 'b'].map((n) => client.createServer(body(n, '1')))));
    const doomed = nova.addServer({ status: 'ACTIVE' }).id;
    await settle(client.requestDelete(doomed));
    const [a, b, gone] = await settle(
      Promise.all([
        waitForActive(client, building[0]!.id, { intervalMs: 1000, jitter: 0 }),
        waitForActive(client, building[1]!.id, { intervalMs: 1000, jitter: 0 }),
        waitForDelete(client, doomed, { intervalMs: 1000, jitter: 0 }),
      ]),
    );
    expect([a.outcome, b.outcome, gone.outcome]).toEqual(['active', 'active', 'deleted']);
    // The building servers were seen only in the listings the delete-wait needed anyway.
    const buildingGets = nova.requests.filter((r) => r.method === 'GET' && building.some((s) => r.path === `/servers/${s.id}`));
    expect(buildingGets).toEqual([]);
    expect(statusListings(nova)).toBe(client.deleteEngine.stats.listings);
    expect(client.deleteEngine.stats.listings).toBeLessThanOrEqual(client.deleteEngine.stats.ticks);
  });
});

describe("the watcher's rules of evidence for an ACTIVE wait", () => {
  it('a failed changes-since listing answers nothing: each due server gets its own GET, none is taken as gone', async () => {
    const nova = await startNova({ buildDelayMs: 3000 });
    const client = clientFor(nova, { maxRequestsPerSecond: Infinity });
    const ids = (await settle(Promise.all(['a', 'b', 'c'].map((n) => client.createServer(body(n, '1')))))).map((s) => s.id);
    // Every listing fails (503) from the start: the waits go on by their own GETs.
    nova.inject({ method: 'GET', path: '/servers/detail', status: 503, times: Infinity });
    const ends = await settle(Promise.all(ids.map((id) => waitForActive(client, id, { intervalMs: 1000, jitter: 0 }))));
    expect(ends.map((r) => r.outcome)).toEqual(['active', 'active', 'active']);
    expect(client.deleteEngine.stats.listingFailures).toBeGreaterThan(0);
    expect(ownGets(nova)).toBeGreaterThanOrEqual(3);
  });

  it('a listing whose next page never came is a failed listing: no server in it is answered, each due one gets its own GET', async () => {
    const nova = await startNova({ buildDelayMs: 5000, pageSize: 1 });
    const client = clientFor(nova, { maxRequestsPerSecond: Infinity, requestTimeoutMs: 2000 });
    const ids = (await settle(Promise.all(['a', 'b', 'c'].map((n) => client.createServer(body(n, '1')))))).map((s) => s.id);
    // The first listing: its first page answers, its second hangs.
    nova.inject({ method: 'GET', path: '/servers/detail', delayMs: 0, times: 1 });
    nova.inject({ method: 'GET', path: '/servers/detail', hang: true, times: 1 });
    const ends = await settle(Promise.all(ids.map((id) => waitForActive(client, id, { intervalMs: 1000, jitter: 0 }))));
    expect(ends.map((r) => r.outcome)).toEqual(['active', 'active', 'active']);
    expect(client.deleteEngine.stats.listingFailures).toBe(1);
    // The failed listing answered none of them: all three were looked at by their own GETs then.
    const gets = nova.requests.filter((r) => r.method === 'GET' && ids.some((id) => r.path === `/servers/${id}`));
    expect(new Set(gets.map((r) => r.path)).size).toBe(3);
  });
});
