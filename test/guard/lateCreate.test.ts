/**
 * No server left behind under any timing of a lost answer: a POST that nova-api handles after the
 * guard's search (a proxy's 504 while nova-api works on, a 429 sent after the request was
 * forwarded) makes a second server with the call's claim tag (a twin of the re-sent POST's), which
 * is deleted, also after the call returned; the call keeps exactly one. FakeNova on fake timers:
 * `passThroughAfterMs` makes Nova handle the POST late while the client got the fault.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CLAIM_TAG_KEY, CreateOutcomeUnknownError } from '../../src/guard/index.js';
import { QuotaGuard, type QuotaGuardOptions } from '../../src/guard/quotaGuard.js';
import { NovaClient } from '../../src/nova/client.js';
import type { FakeNova } from '../../src/testing/index.js';
import { FAST, body, liveServers, startNova } from './fixtures.js';
import { rejection, runUntil, settle } from '../helpers.js';

afterEach(() => {
  vi.useRealTimers();
});

const OPTS: QuotaGuardOptions = { ...FAST, maxWaitMs: 60000, jitter: 0, lostCreateIntervalMs: 1000, lostCreateSearches: 4, novaApiTimeoutMs: 10000 };

/** A client on `nova` with a 2000 ms request limit and no retries of its own. */
function clientOf(nova: FakeNova): NovaClient {
  return new NovaClient({ endpoint: nova.endpoint, token: `admin:${nova.projectId}`, microversion: '2.79', adapter: nova.adapter, requestTimeoutMs: 2000, retry: { retries: 0 } });
}

/** Times (ms since `t0`) of the POSTs and searches. */
function schedule(nova: FakeNova, t0: number): Array<[string, number]> {
  return nova.requests
    .filter((r) => (r.method === 'POST' && r.path === '/servers') || (r.method === 'GET' && r.path === '/servers/detail'))
    .map((r) => [`${r.method} ${r.path}`, r.timeMs - t0]);
}

const GATEWAY_TIMEOUT = { status: 504, body: '<html><body>504 Gateway Time-out</body></html>', headers: { 'Content-Type': 'text/html' } };
const NOVA_OVERLIMIT_429 = { status: 429, body: { overLimit: { code: 429, message: 'This request was rate-limited.', retryAfter: '1' } }, headers: { 'Retry-After': '1' } };

describe('a POST that nova-api handles after the lost-create searches', () => {
  it('(a) a proxy 504 at 1 s while Nova creates the server 5 s later: one clean search, the POST re-sent at once with the same tag; the late server is a twin, deleted after the call; exactly one server', async () => {
    vi.useFakeTimers();
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', ...GATEWAY_TIMEOUT, delayMs: 1000, passThroughAfterMs: 6000 });
    const guard = new QuotaGuard(clientOf(nova), OPTS);
    const t0 = Date.now();
    const server = await settle(guard.createServer(body('ci-1')));
    expect(schedule(nova, t0).slice(0, 3)).toEqual([
      ['POST /servers', 0],
      ['GET /servers/detail', 1000],
      ['POST /servers', 1000],
    ]);
    expect(guard.unsettledCreates()).toMatchObject([{ callRunning: false, keptServerId: server.id, posts: 2, serversSeen: 1 }]);
    // Nova made the first POST's server at 6000: the watch after the call finds it by the tag and deletes it.
    await runUntil(() => nova.listServerStates().length === 2);
    const twin = nova.listServerStates().find((s) => s.id !== server.id)!;
    expect(twin.metadata[CLAIM_TAG_KEY]).toBe(nova.getServerState(server.id)?.metadata?.[CLAIM_TAG_KEY]);
    // The ledger counts the twin while it lives: one more claim is held.
    expect(guard.inFlightClaims).toBe(1);
    await runUntil(() => guard.unsettledCreates().length === 0);
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(2);
    expect(nova.requests.filter((r) => r.method === 'DELETE').map((r) => r.serverId)).toEqual([twin.id]);
    expect(liveServers(nova)).toEqual([server.id]);
    expect(guard.stats).toMatchObject({ ambiguousCreates: 1, adoptedServers: 0, lateCreatesDeleted: 1 });
    expect(guard.inFlightClaims).toBe(0);
    await guard.close();
  });

  it('(a) nothing ever lands: the POST re-sent at once after one clean search; the watch settles once the first POST\'s time surely passed (12000 ms), exactly one server', async () => {
    vi.useFakeTimers();
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', ...GATEWAY_TIMEOUT, delayMs: 1000 });
    const guard = new QuotaGuard(clientOf(nova), OPTS);
    const t0 = Date.now();
    const server = await settle(guard.createServer(body('ci-1')));
    await runUntil(() => guard.unsettledCreates().length === 0);
    const searches = schedule(nova, t0);
    expect(searches.slice(0, 3)).toEqual([
      ['POST /servers', 0],
      ['GET /servers/detail', 1000],
      ['POST /servers', 1000],
    ]);
    // The watch's last search is at the bound.
    expect(searches.at(-1)).toEqual(['GET /servers/detail', 12000]);
    expect(liveServers(nova)).toEqual([server.id]);
    expect(guard.inFlightClaims).toBe(0);
  });

  it("(b) Nova's overLimit 429 after the request was forwarded, its server made at 5 s: the call returns the re-sent POST's server, and the late one is deleted after the call returned", async () => {
    vi.useFakeTimers();
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', ...NOVA_OVERLIMIT_429, passThroughAfterMs: 5000 });
    const guard = new QuotaGuard(clientOf(nova), OPTS);
    const server = await settle(guard.createServer(body('ci-1')));
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(2);
    expect(liveServers(nova)).toEqual([server.id]);
    // The call has returned; its tag is still watched.
    const [watched] = guard.unsettledCreates();
    expect(watched).toMatchObject({ serverName: 'ci-1', callRunning: false, keptServerId: server.id, posts: 2, serversSeen: 1, deletedServerIds: [] });
    expect(guard.unsettledCreates()).toHaveLength(1);
    // The reaper's liveClaims sees the watched tag as live.
    expect(guard.liveClaims()).toContainEqual({ key: CLAIM_TAG_KEY, values: [watched!.claimTag] });
    // Nova makes the first POST's server late, with the same tag.
    await runUntil(() => nova.listServerStates().length === 2);
    const late = nova.listServerStates().find((s) => s.id !== server.id)!;
    expect(late.metadata[CLAIM_TAG_KEY]).toBe(watched!.claimTag);
    await runUntil(() => guard.unsettledCreates().length === 0);
    expect(nova.requests.filter((r) => r.method === 'DELETE').map((r) => r.serverId)).toEqual([late.id]);
    expect(liveServers(nova)).toEqual([server.id]);
    expect(guard.stats).toMatchObject({ lateCreatesDeleted: 1, rateLimitRetries: 1 });
    expect(guard.liveClaims()).toContainEqual({ key: CLAIM_TAG_KEY, values: [] });
  });

  it('(b) the searches fail until the call runs out of maxWaitMs: CreateOutcomeUnknownError, and the server that lands afterwards is deleted', async () => {
    vi.useFakeTimers();
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', ...GATEWAY_TIMEOUT, delayMs: 1000, passThroughAfterMs: 9000 });
    nova.inject({ method: 'GET', path: '/servers/detail', status: 503, body: 'Service Unavailable', headers: { 'Content-Type': 'text/plain' }, times: 4 });
    const guard = new QuotaGuard(clientOf(nova), { ...OPTS, maxWaitMs: 5000 });
    const err = await rejection(settle(guard.createServer(body('ci-1'))));
    expect(err).toBeInstanceOf(CreateOutcomeUnknownError);
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(1);
    expect(liveServers(nova)).toEqual([]);
    expect(guard.unsettledCreates()).toMatchObject([{ claimTag: (err as CreateOutcomeUnknownError).claimTag, callRunning: false, keptServerId: undefined }]);
    await runUntil(() => nova.listServerStates().length === 1);
    const late = nova.listServerStates()[0]!;
    await runUntil(() => guard.unsettledCreates().length === 0);
    expect(nova.requests.filter((r) => r.method === 'DELETE').map((r) => r.serverId)).toEqual([late.id]);
    expect(liveServers(nova)).toEqual([]);
    expect(guard.stats.lateCreatesDeleted).toBe(1);
    expect(guard.inFlightClaims).toBe(0);
  });
});

describe('unsettledCreates() and close()', () => {
  it('(c) lists the tag while it is watched (during the call, then after it) and empties once settled', async () => {
    vi.useFakeTimers();
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', ...GATEWAY_TIMEOUT, delayMs: 1000, passThroughAfterMs: 6000 });
    // The first search fails: the call waits before the next one.
    nova.inject({ method: 'GET', path: '/servers/detail', status: 503, body: 'Service Unavailable', headers: { 'Content-Type': 'text/plain' } });
    const guard = new QuotaGuard(clientOf(nova), OPTS);
    expect(guard.unsettledCreates()).toEqual([]);
    const pending = guard.createServer(body('ci-1'));
    await runUntil(() => nova.requestsTo('GET', '/servers/detail').length === 1);
    expect(guard.unsettledCreates()).toEqual([
      { claimTag: expect.stringMatching(/^[0-9a-f-]{36}$/), serverName: 'ci-1', posts: 1, serversSeen: 0, keptServerId: undefined, deletedServerIds: [], callRunning: true, boundInMs: 11000 },
    ]);
    const server = await settle(pending);
    expect(guard.unsettledCreates()).toMatchObject([{ serverName: 'ci-1', posts: 2, serversSeen: 1, keptServerId: server.id, callRunning: false }]);
    await runUntil(() => guard.unsettledCreates().length === 0);
    expect(liveServers(nova)).toEqual([server.id]);
  });

  it('close() ends a watch that goes on after the call: no request after it, the list is empty', async () => {
    vi.useFakeTimers();
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', ...NOVA_OVERLIMIT_429 });
    const guard = new QuotaGuard(clientOf(nova), OPTS);
    await settle(guard.createServer(body('ci-1')));
    expect(guard.unsettledCreates()).toHaveLength(1);
    await guard.close();
    expect(guard.unsettledCreates()).toEqual([]);
    const sent = nova.requests.length;
    await vi.advanceTimersByTimeAsync(60000);
    expect(nova.requests.length).toBe(sent);
    expect(vi.getTimerCount()).toBe(0);
  });
});
