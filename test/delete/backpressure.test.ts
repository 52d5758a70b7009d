/**
 * Backpressure of the delete engine, on fake timers against FakeNova: a slow or failing Nova gets
 * fewer requests, never more. A slow listing is an answer (no per-server GETs follow), one listing is
 * in flight at a time, the poll interval widens on 5xx and narrows back slowly, the DELETEs in flight
 * shrink when their latency grows, and on a Nova whose every answer takes 1.5 intervals the shared
 * engine sends no more looks than osc-lib's per-server loop replayed on the same Nova timeline.
 */
import { describe, expect, it } from 'vitest';
import { deleteServers, waitForDelete } from '../../src/index.js';
import type { FakeNova } from '../../src/testing/index.js';
import { clientFor, serverPath, settle, startNova, T0, useFakeClock } from '../helpers.js';

useFakeClock();

const SERVER = /^\/servers\/[0-9a-f-]{36}$/;
const LISTING = /^\/servers(\/detail)?$/;

/** The look requests FakeNova saw (GETs of one server, listings), arrival times since T0. */
function looks(nova: FakeNova): { gets: number[]; listings: number[] } {
  const gets = nova.requests.filter((q) => q.method === 'GET' && SERVER.test(q.path)).map((q) => q.timeMs - T0);
  const listings = nova.requests.filter((q) => q.method === 'GET' && LISTING.test(q.path)).map((q) => q.timeMs - T0);
  return { gets, listings };
}

/** Most requests in flight at once, each taking `latencyMs` from its arrival (every answer delayed alike). */
function mostInFlight(arrivals: number[], latencyMs: number): number {
  return Math.max(0, ...arrivals.map((a) => arrivals.filter((b) => b <= a && a < b + latencyMs).length));
}

/**
 * osc-lib's `wait_for_delete` replayed on a Nova timeline: from the answer to its DELETE
 * (`answeredAt`), one `GET /servers/{id}` whose answer takes `latencyMs`, then a sleep of
 * `intervalMs`, until a GET is handled at or after `goneAt` (the 404). Returns the GETs sent.
 */
function oscLibGets(answeredAt: number, goneAt: number, latencyMs: number, intervalMs: number): number {
  let gets = 0;
  for (let sentAt = answeredAt; ; sentAt += latencyMs + intervalMs) {
    gets++;
    if (sentAt + latencyMs >= goneAt) return gets;
  }
}

describe('a slow answer is still an answer', () => {
  it('a listing taking 2 intervals is not a failed look: no fallback GET follows (only the one 404 a server that proves it gone), one listing in flight at a time', async () => {
    const nova = await startNova({ deletedWindowMs: 2000, deleteDelayMs: 3000 });
    nova.addServer({ name: 'bystander' }); // a server nobody deletes: the listings are plausibly this project's
    const ids = Array.from({ length: 3 }, (_, i) => nova.addServer({ name: `s${i}` }).id);
    const client = clientFor(nova, { requestTimeoutMs: 30_000 });
    nova.inject({ method: 'GET', path: LISTING, delayMs: 2000, times: Number.POSITIVE_INFINITY });
    const r = await settle(deleteServers(client, ids, { wait: true, intervalMs: 1000, jitter: 0, timeoutMs: 120_000 }));
    expect(r.failed).toEqual([]);
    expect(r.results.map((x) => x.status === 'fulfilled' && x.value.outcome)).toEqual(['deleted', 'deleted', 'deleted']);
    const { gets, listings } = looks(nova);
    expect(client.deleteEngine.stats.listingFailures).toBe(0);
    // The only GETs: one a server once a listing no longer showed it, answered by its 404 (the proof).
    expect(gets).toHaveLength(ids.length);
    for (const id of ids) expect(nova.requestsTo('GET', serverPath(id)).map((q) => q.status)).toEqual([404]);
    expect(listings.length).toBeGreaterThan(0);
    expect(mostInFlight(listings, 2000)).toBe(1);
  });
});

describe('the poll interval follows Nova', () => {
  it('widens under 503s (doubling, up to 4 intervals) and narrows back to the caller interval by half an interval per healthy answer', async () => {
    const nova = await startNova();
    const id = nova.addServer({ name: 'kept' }).id; // never deleted: the wait ends at its timeout
    const client = clientFor(nova);
    nova.inject({ method: 'GET', path: SERVER, status: 503, times: 3 });
    const r = await settle(waitForDelete(client, id, { intervalMs: 1000, jitter: 0, timeoutMs: 100_000, pollRetries: 10 }));
    expect(r.outcome).toBe('timeout');
    const { gets } = looks(nova);
    const gaps = gets.slice(1).map((t, i) => t - gets[i]!);
    // 503, 503, 503: the interval doubles each time up to 4 intervals (2 s, 4 s, 4 s); then each healthy answer takes half an interval off.
    expect(gaps.slice(0, 3)).toEqual([2000, 4000, 4000]);
    expect(gaps.slice(3, 9)).toEqual([3500, 3000, 2500, 2000, 1500, 1000]);
    expect(new Set(gaps.slice(9))).toEqual(new Set([1000]));
    expect(client.deleteEngine.outbound.pace.factor).toBe(1);
  });
});

describe('the waits of a batch start together on a slow Nova', () => {
  it('DELETEs answered after more than intervalMs: the first look is a shared listing, not one wait alone with its own GET', async () => {
    const nova = await startNova({ deleteDelayMs: 5000 });
    nova.addServer({ name: 'bystander' });
    const ids = Array.from({ length: 3 }, (_, i) => nova.addServer({ name: `s${i}` }).id);
    const client = clientFor(nova);
    nova.inject({ method: 'DELETE', path: SERVER, delayMs: 1500, times: Number.POSITIVE_INFINITY });
    const r = await settle(deleteServers(client, ids, { wait: true, intervalMs: 1000, jitter: 0, timeoutMs: 120_000 }));
    expect(r.failed).toEqual([]);
    const firstLook = nova.requests.find((q) => q.method === 'GET');
    expect(firstLook?.path).toMatch(LISTING);
  });
});

describe('DELETEs in flight follow their latency', () => {
  it('starts with 2 DELETEs in flight and goes one at a time once DELETEs answer slowly', async () => {
    const nova = await startNova();
    const ids = Array.from({ length: 10 }, (_, i) => nova.addServer({ name: `s${i}` }).id);
    const client = clientFor(nova);
    // The first two DELETEs answer in 100 ms, every later one in 3 s (Nova's API worker busy with them).
    nova.inject({ method: 'DELETE', path: SERVER, delayMs: 100, times: 2 });
    nova.inject({ method: 'DELETE', path: SERVER, delayMs: 3000, times: Number.POSITIVE_INFINITY });
    const r = await settle(deleteServers(client, ids, { timeoutMs: 300_000 }));
    expect(r.failed).toEqual([]);
    const deletes = nova.requests.filter((q) => q.method === 'DELETE').map((q) => q.timeMs - T0);
    expect(deletes).toHaveLength(10);
    expect(deletes.filter((t) => t === 0)).toHaveLength(2);
    expect(mostInFlight(deletes.slice(2), 3000)).toBeLessThanOrEqual(3);
    // Once slow answers came back, one DELETE at a time.
    const last = deletes.slice(-4);
    expect(last.slice(1).map((t, i) => t - last[i]!)).toEqual([3000, 3000, 3000]);
    expect(client.deleteEngine.outbound.deleteWindow).toBe(1);
  });
});

describe('a Nova whose every answer takes 1.5 intervals', () => {
  /** Delete 10 servers with the shared engine; its looks and osc-lib's loop replayed on the same Nova timeline. */
  async function run(INTERVAL: number, DELETE_DELAY: number, WINDOW: number): Promise<{ looks: number; replay: number; listingsInFlight: number }> {
    const LATENCY = 1.5 * INTERVAL;
    const nova = await startNova({ deleteDelayMs: DELETE_DELAY, deletedWindowMs: WINDOW });
    nova.addServer({ name: 'bystander' });
    const ids = Array.from({ length: 10 }, (_, i) => nova.addServer({ name: `s${i}` }).id);
    const client = clientFor(nova, { requestTimeoutMs: 30_000 });
    nova.inject({ path: /.*/, delayMs: LATENCY, times: Number.POSITIVE_INFINITY });
    const started = Date.now() - T0;
    const r = await settle(deleteServers(client, ids, { wait: true, intervalMs: INTERVAL, jitter: 0, timeoutMs: 600_000 }));
    expect(r.failed).toEqual([]);
    expect(r.results.every((x) => x.status === 'fulfilled' && x.value.outcome === 'deleted')).toBe(true);
    // The same Nova timeline: each DELETE is handled LATENCY after it arrived, its server is destroyed
    // DELETE_DELAY + WINDOW later; osc-lib's loop starts at the DELETE's answer.
    const mine = nova.requests.filter((q) => q.timeMs - T0 >= started);
    const replay = mine
      .filter((q) => q.method === 'DELETE')
      .reduce((n, q) => n + oscLibGets(q.timeMs - T0 + LATENCY, q.timeMs - T0 + LATENCY + DELETE_DELAY + WINDOW, LATENCY, INTERVAL), 0);
    const { gets, listings } = looks(nova);
    return { looks: gets.length + listings.length, replay, listingsInFlight: mostInFlight(listings, LATENCY) };
  }

  // [intervalMs, deleteDelayMs (deleting to DELETED), deletedWindowMs (DELETED to the 404)]: short and
  // long deletions; in the last (Nova slow to destroy, the servers DELETED for a minute) the engine
  // before backpressure sent more looks than osc-lib's loop (64 against 60).
  it('10 servers: the shared engine sends no more looks than osc-lib per-server polling on the same timeline, one listing in flight', async () => {
    for (const [interval, deleting, deleted] of [
      [1000, 6000, 3000],
      [5000, 2000, 15_000],
      [5000, 5000, 60_000],
    ] as const) {
      const { looks: sent, replay, listingsInFlight } = await run(interval, deleting, deleted);
      expect(sent, `interval ${interval} ms, deleting ${deleting} ms, DELETED ${deleted} ms`).toBeLessThanOrEqual(replay);
      expect(listingsInFlight).toBe(1);
    }
  });
});
