/**
 * Property tests of the delete path against a hostile cloud (fast-check, on fake timers): 404s that
 * are not Nova's answer for the server (another id containing it, no message, a generic one),
 * endless listings, 429 with Retry-After, garbled or far-off `Date` headers, odd status values,
 * a finite rate limit, callers that abort, `deleteServers` batches, listings answered with another
 * project's servers (a misrouted cache or proxy: brief, or detailed with their `tenant_id`), brief
 * listings cut in front of Nova with no next link (some servers dropped, one kept, the first page
 * only: a proxy, a cache, a page size). For every run:
 * - never `deleted`/`already-gone` before Nova's 404 for the server;
 * - every call settles by its `timeoutMs` (or its abort), plus the stepping of the fake clock;
 * - nothing reaches Nova after the last call settled, and no timer is left;
 * - every server whose deletion was not confirmed stays in `unconfirmedDeletes()`.
 */
import type { AxiosResponse } from 'axios';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { deleteServers, waitForDelete } from '../../src/index.js';
import { hostileSetup, reply } from './support/hostile.js';
import type { Timeline } from './support/scriptedNova.js';

const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);
const STEP_MS = 10;
const REQUEST_TIMEOUT_MS = 1000;

afterEach(() => {
  vi.useRealTimers();
});

type Hostile = 'substring404' | 'noMessage404' | 'generic404' | 'endless' | 'rateLimited' | 'garbageDate' | 'farDate' | 'oddStatus' | 'hang' | 'foreignListing' | 'foreignDetail' | Cut;

/** A brief listing cut in front of Nova, no next link: one server dropped, only one kept, or the first half (its first page). */
type Cut = 'dropOne' | 'keepOne' | 'firstPage';
const CUTS: readonly Cut[] = ['dropOne', 'keepOne', 'firstPage'];

const hostileArb: fc.Arbitrary<Hostile | undefined> = fc.oneof(
  { weight: 10, arbitrary: fc.constant(undefined) },
  { weight: 4, arbitrary: fc.constantFrom<Hostile>('substring404', 'noMessage404', 'generic404', 'endless', 'rateLimited', 'garbageDate', 'farDate', 'oddStatus', 'hang', 'foreignListing', 'foreignListing', 'foreignDetail', ...CUTS) },
);

const timelineArb: fc.Arbitrary<Timeline> = fc.oneof(
  fc.record({ deletedAfterMs: fc.integer({ min: 0, max: 3000 }), extra: fc.integer({ min: 0, max: 4000 }) }).map(({ deletedAfterMs, extra }) => ({ deletedAfterMs, goneAfterMs: deletedAfterMs + extra })),
  fc.record({ goneAfterMs: fc.integer({ min: 0, max: 4000 }) }),
  fc.constant<Timeline>({}),
  fc.record({ errorAfterMs: fc.integer({ min: 0, max: 3000 }) }),
  fc.constant<Timeline>({ unknown: true }),
);

const scenarioArb = fc.integer({ min: 1, max: 6 }).chain((n) =>
  fc.record({
    timelines: fc.array(timelineArb, { minLength: n, maxLength: n }),
    hostile: fc.array(hostileArb, { minLength: 1, maxLength: 100 }),
    rps: fc.constantFrom(Number.POSITIVE_INFINITY, 20, 3),
    coalesce: fc.boolean(),
    batch: fc.boolean(),
    intervalMs: fc.constantFrom(200, 500, 1000),
    timeoutMs: fc.integer({ min: 1500, max: 10_000 }),
    abortAtMs: fc.option(fc.integer({ min: 0, max: 8000 }), { nil: undefined }),
  }),
);

type Scenario = typeof scenarioArb extends fc.Arbitrary<infer S> ? S : never;

async function play(sc: Scenario): Promise<void> {
  vi.useFakeTimers({ now: T0 });
  const { nova, client, front } = hostileSetup({
    coalesce: sc.coalesce,
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
    maxRequestsPerSecond: sc.rps,
    retry: { retries: 2, minDelayMs: 50, maxDelayMs: 200, maxRetryTimeMs: 1000 },
  });
  let k = 0;
  front.override = ({ config, method, path }) => {
    const h = sc.hostile[k++ % sc.hostile.length];
    const id = /^\/servers\/([^/]+)$/.exec(path)?.[1];
    const listing = path === '/servers' || path === '/servers/detail';
    if (h === 'hang') return new Promise<AxiosResponse>(() => undefined).finally(() => undefined);
    if (h === 'rateLimited') return reply(config, 429, { overLimit: { code: 429, message: 'Rate limit exceeded' } }, { 'retry-after': '1' });
    if (id !== undefined && (method === 'GET' || method === 'DELETE')) {
      if (h === 'substring404') return reply(config, 404, { itemNotFound: { code: 404, message: `Instance ${id}0 could not be found.` } });
      if (h === 'noMessage404') return reply(config, 404, { itemNotFound: { code: 404 } });
      if (h === 'generic404') return reply(config, 404, { itemNotFound: { code: 404, message: 'The resource could not be found.' } });
    }
    if (listing && (h === 'foreignListing' || h === 'foreignDetail') && method === 'GET') {
      const other = { id: `${String(k).padStart(8, '0')}-0000-4000-8000-0000000000f0`, status: 'ACTIVE', tenant_id: 'another-project', links: [] };
      return reply(config, 200, { servers: [other] });
    }
    if (listing && h === 'endless' && method === 'GET') {
      const body = { servers: [{ id: `other-${k}`, status: 'ACTIVE' }], servers_links: [{ rel: 'next', href: `http://nova.test/v2.1${path}?marker=m${k}` }] };
      return new Promise<AxiosResponse>((resolve) => setTimeout(() => resolve(reply(config, 200, body)), 100));
    }
    // Cut in front of Nova: the brief listing and the detail ones (the whole project's, which stands in
    // for a brief listing when a round wants status too, and `changes-since`).
    if ((path === '/servers' || path === '/servers/detail') && method === 'GET' && (h === 'dropOne' || h === 'keepOne' || h === 'firstPage')) {
      return Promise.resolve(nova.adapter(config)).then((res) => {
        if (res.status !== 200 || typeof res.data !== 'string') return res;
        const servers = (JSON.parse(res.data) as { servers: Array<{ id: string }> }).servers;
        const at = k % Math.max(1, servers.length);
        const kept = h === 'dropOne' ? servers.filter((_, i) => i !== at) : h === 'keepOne' ? servers.slice(at, at + 1) : servers.slice(0, Math.ceil(servers.length / 2));
        res.data = JSON.stringify({ servers: kept });
        return res;
      });
    }
    if (h === 'garbageDate' || h === 'farDate' || h === 'oddStatus') {
      return Promise.resolve(nova.adapter(config)).then((res) => {
        const headers = res.headers as Record<string, string>;
        if (h === 'garbageDate') headers['date'] = 'not a date';
        if (h === 'farDate') headers['date'] = new Date(Date.now() + 86_400_000 * 400).toUTCString();
        if (h === 'oddStatus' && typeof res.data === 'string') res.data = res.data.replace(/"status":"DELETED"/g, '"status":"deleted"').replace(/"status":"ACTIVE"/g, '"status":null');
        return res;
      });
    }
    return undefined;
  };
  const ids = sc.timelines.map((t, i) => {
    nova.add(`${String(i).padStart(8, '0')}-0000-4000-8000-000000000000`, t);
    return `${String(i).padStart(8, '0')}-0000-4000-8000-000000000000`;
  });
  const controller = new AbortController();
  if (sc.abortAtMs !== undefined) setTimeout(() => controller.abort(new Error('caller gave up')), sc.abortAtMs);
  const opts = { intervalMs: sc.intervalMs, timeoutMs: sc.timeoutMs, jitter: 0.1, signal: controller.signal };
  const ends = new Map<string, { outcome: string | undefined; error: unknown; settledAt: number }>();
  const record = (id: string, outcome: string | undefined, error: unknown): void => void ends.set(id, { outcome, error, settledAt: Date.now() - T0 });
  if (sc.batch) {
    void deleteServers(client, ids, { ...opts, wait: true }).then((r) => {
      for (const x of r.results) record(x.serverId, x.status === 'fulfilled' ? x.value.outcome : undefined, x.status === 'rejected' ? x.reason : undefined);
    });
  } else {
    for (const [i, id] of ids.entries()) {
      if (i % 2 === 0) void client.deleteServer(id, { ...opts, wait: true }).then((r) => record(id, r.outcome, undefined), (e: unknown) => record(id, undefined, e));
      else void waitForDelete(client, id, opts).then((r) => record(id, r.outcome, undefined), (e: unknown) => record(id, undefined, e));
    }
  }
  for (let t = 0; t < sc.timeoutMs + 5 * REQUEST_TIMEOUT_MS && ends.size < ids.length; t += STEP_MS) await vi.advanceTimersByTimeAsync(STEP_MS);
  expect(ends.size).toBe(ids.length);
  const last = Math.max(...[...ends.values()].map((e) => e.settledAt));
  await vi.advanceTimersByTimeAsync(30_000);
  expect(nova.seen.filter((q) => q.at - T0 > last).map((q) => `${q.method} ${q.path} at ${q.at - T0}`)).toEqual([]);
  expect(vi.getTimerCount()).toBe(0);
  const unconfirmed = new Set(client.unconfirmedDeletes().map((u) => u.serverId));
  for (const [i, id] of ids.entries()) {
    const e = ends.get(id)!;
    const goneAt = nova.goneAt(id);
    if (e.outcome === 'deleted' || e.outcome === 'already-gone') {
      expect(goneAt, `${id} reported ${e.outcome} but Nova never answered 404`).toBeDefined();
      expect(e.settledAt, `${id} reported ${e.outcome} before its 404`).toBeGreaterThanOrEqual(goneAt! - T0);
    }
    const bound = Math.min(sc.timeoutMs, sc.abortAtMs ?? Number.POSITIVE_INFINITY);
    expect(e.settledAt, `${id} settled late`).toBeLessThanOrEqual(bound + STEP_MS);
    const viaDelete = sc.batch || i % 2 === 0;
    if (viaDelete && e.outcome === undefined) expect(unconfirmed.has(id), `${id} failed and left the ledger`).toBe(true);
  }
}

/**
 * Shared listings only, and most brief listings cut: several servers whose deletions last longer
 * than the waits or end within them, so a cut listing meets servers Nova still shows.
 */
const partialArb = fc.integer({ min: 2, max: 8 }).chain((n) =>
  fc.record({
    timelines: fc.array(
      fc.oneof(fc.constant<Timeline>({}), fc.record({ goneAfterMs: fc.integer({ min: 1000, max: 6000 }) }), fc.record({ deletedAfterMs: fc.integer({ min: 500, max: 3000 }), extra: fc.integer({ min: 0, max: 3000 }) }).map(({ deletedAfterMs, extra }) => ({ deletedAfterMs, goneAfterMs: deletedAfterMs + extra }))),
      { minLength: n, maxLength: n },
    ),
    hostile: fc.array(fc.oneof({ weight: 1, arbitrary: fc.constant<Hostile | undefined>(undefined) }, { weight: 3, arbitrary: fc.constantFrom<Hostile | undefined>(...CUTS) }), { minLength: 1, maxLength: 30 }),
    rps: fc.constantFrom(Number.POSITIVE_INFINITY, 20),
    coalesce: fc.constant(true),
    batch: fc.boolean(),
    intervalMs: fc.constantFrom(200, 500, 1000),
    timeoutMs: fc.integer({ min: 1500, max: 8000 }),
    abortAtMs: fc.constant(undefined),
  }),
);

describe('the delete path against a hostile cloud', () => {
  it('never deleted before the 404, bounded, nothing left running, nothing forgotten', async () => {
    await fc.assert(fc.asyncProperty(scenarioArb, play), { numRuns: Number(process.env.HOSTILE_RUNS ?? 80) });
  });

  it('listings cut in front of Nova (brief and detail, the whole project listing included: one dropped, one kept, first page only): 0 deleted before the 404, every call by its deadline', async () => {
    await fc.assert(fc.asyncProperty(partialArb, play), { numRuns: Number(process.env.HOSTILE_RUNS ?? 60) });
  });
});
