/**
 * One ambiguous answer to a POST costs one search, not the job: a reset before the request reached
 * Nova, a proxy's 504 or an empty 200 (Nova made the server before the answer, or makes it late).
 * With `maxWaitMs` 20 s and the lost-create defaults (searches 5 s apart, a POST's time surely
 * passes 30 s + 180 s after it was sent), the call returns a server within 20 s; once the guard is
 * closed exactly that one server of the call is alive at FakeNova, and none when the call failed
 * for another reason. A server of the lost POST that lands after the re-sent one (a twin) is found
 * by the call's claim tag and deleted, and the ledger counts it while it may live. FakeNova on fake
 * timers (`passThroughAfterMs`: Nova handles the POST though the client got the fault).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CLAIM_TAG_KEY, CreateOutcomeUnknownError } from '../../src/guard/index.js';
import { QuotaGuard, type QuotaGuardOptions } from '../../src/guard/quotaGuard.js';
import { NovaClient } from '../../src/nova/client.js';
import { InProcessQuotaLedger } from '../../src/ledger/inProcess.js';
import { faulty } from './support/testLedger.js';
import type { FakeNova, FaultSpec } from '../../src/testing/index.js';
import { FAST, body, liveServers, startNova } from './fixtures.js';
import { rejection, runUntil, settle } from '../helpers.js';

afterEach(() => {
  vi.useRealTimers();
});

/** The lost-create options at their defaults; maxWaitMs 20 s. */
const OPTS: QuotaGuardOptions = { ...FAST, maxWaitMs: 20_000 };
/** When the lost POST's time surely passes: the client's 30 s request limit + novaApiTimeoutMs (180 s). */
const BOUND_MS = 30_000 + 180_000;

/** A client on `nova` with its default 30 s request limit and no retries of its own. */
function clientOf(nova: FakeNova): NovaClient {
  return new NovaClient({ endpoint: nova.endpoint, token: `admin:${nova.projectId}`, microversion: '2.79', adapter: nova.adapter, retry: { retries: 0 } });
}

const GATEWAY_TIMEOUT = { status: 504, body: '<html><body>504 Gateway Time-out</body></html>', headers: { 'Content-Type': 'text/html' } };
const EMPTY_200 = { status: 200, body: '', headers: { 'Content-Type': 'application/json' } };

/** POSTs and searches, ms since `t0` (the call's: the first `n`; the watch after the call may have searched since). */
function schedule(nova: FakeNova, t0: number): Array<[string, number]> {
  return nova.requests
    .filter((r) => (r.method === 'POST' && r.path === '/servers') || (r.method === 'GET' && r.path === '/servers/detail'))
    .map((r) => [`${r.method} ${r.path}`, r.timeMs - t0]);
}

/** Run until the guard watches no claim tag any more (its watches settled), then close it. */
async function settleAndClose(guard: QuotaGuard): Promise<void> {
  await runUntil(() => guard.unsettledCreates().length === 0);
  await guard.close();
}

type Case = [string, Omit<FaultSpec, 'method' | 'path'>];

/** Nova made the server before the answer came back. */
const CREATED_BEFORE: Case[] = [
  ['a 504 after Nova created the server', { ...GATEWAY_TIMEOUT, delayMs: 500, passThroughAfterMs: 0 }],
  ['an empty 200 after Nova created the server', { ...EMPTY_200, delayMs: 500, passThroughAfterMs: 0 }],
];

/** The request reached Nova, which makes the server after the call's deadline (25 s). */
const CREATED_LATE: Case[] = [
  ['a 504 while Nova makes the server at 25 s', { ...GATEWAY_TIMEOUT, delayMs: 500, passThroughAfterMs: 25_000 }],
  ['an empty 200 while Nova makes the server at 25 s', { ...EMPTY_200, delayMs: 500, passThroughAfterMs: 25_000 }],
];

describe('one ambiguous answer to a POST, maxWaitMs 20 s', () => {
  it('(a) a reset before the request reached Nova: one clean search, the POST re-sent at once with the same tag; the call returns that server within 20 s, exactly one server once closed', async () => {
    vi.useFakeTimers();
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', reset: true });
    const guard = new QuotaGuard(clientOf(nova), OPTS);
    const t0 = Date.now();
    const server = await settle(guard.createServer(body('ci-1')));
    expect(Date.now() - t0).toBeLessThan(20_000);
    expect(schedule(nova, t0).slice(0, 3)).toEqual([
      ['POST /servers', 0],
      ['GET /servers/detail', 0],
      ['POST /servers', 0],
    ]);
    const posts = nova.requestsTo('POST', '/servers');
    expect(posts).toHaveLength(2);
    expect(liveServers(nova)).toEqual([server.id]);
    expect(guard.stats).toMatchObject({ ambiguousCreates: 1, adoptedServers: 0, succeeded: 1 });
    // The reset POST may still land until its time surely passes: the tag stays watched after the call.
    expect(guard.unsettledCreates()).toMatchObject([{ callRunning: false, keptServerId: server.id, posts: 2, serversSeen: 1 }]);
    await settleAndClose(guard);
    expect(liveServers(nova)).toEqual([server.id]);
    expect(nova.getServerState(server.id)?.metadata?.[CLAIM_TAG_KEY]).toMatch(/^[0-9a-f-]{36}$/);
    expect(guard.inFlightClaims).toBe(0);
    expect(guard.stats.lateCreatesDeleted).toBe(0);
  });

  it.each(CREATED_BEFORE)('(b, c) %s: the first search finds it by its tag and adopts it, one POST, exactly one server once closed', async (_what, fault) => {
    vi.useFakeTimers();
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', ...fault });
    const guard = new QuotaGuard(clientOf(nova), OPTS);
    const t0 = Date.now();
    const server = await settle(guard.createServer(body('ci-1')));
    expect(Date.now() - t0).toBeLessThan(20_000);
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(1);
    expect(guard.stats).toMatchObject({ ambiguousCreates: 1, adoptedServers: 1 });
    await settleAndClose(guard);
    expect(liveServers(nova)).toEqual([server.id]);
    expect(guard.inFlightClaims).toBe(0);
  });

  it.each(CREATED_LATE)('(b, c) %s: the POST re-sent after one clean search; the call returns within 20 s; the twin that lands later is deleted, counted by the ledger while it may live; exactly one server once closed', async (_what, fault) => {
    vi.useFakeTimers();
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', ...fault });
    const guard = new QuotaGuard(clientOf(nova), OPTS);
    const t0 = Date.now();
    const server = await settle(guard.createServer(body('ci-1')));
    expect(Date.now() - t0).toBeLessThan(20_000);
    expect(schedule(nova, t0).slice(0, 3)).toEqual([
      ['POST /servers', 0],
      ['GET /servers/detail', 500],
      ['POST /servers', 500],
    ]);
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(2);
    expect(liveServers(nova)).toEqual([server.id]);
    // The kept server is ACTIVE (Nova counts it); one more claim (flavor 2: 2 cores) stands for the twin.
    expect(guard.inFlightClaims).toBe(1);
    expect((await guard.headroom()).cores.inFlight).toBe(2);
    // Nova makes the lost POST's server, with the call's tag.
    await runUntil(() => nova.listServerStates().length === 2);
    const twin = nova.listServerStates().find((s) => s.id !== server.id)!;
    expect(twin.metadata[CLAIM_TAG_KEY]).toBe(nova.getServerState(server.id)?.metadata?.[CLAIM_TAG_KEY]);
    expect(guard.inFlightClaims).toBe(1);
    await runUntil(() => liveServers(nova).length === 1);
    expect(liveServers(nova)).toEqual([server.id]);
    expect(nova.requests.filter((r) => r.method === 'DELETE').map((r) => r.serverId)).toEqual([twin.id]);
    // The watch settles (the lost POST's time surely passed): the twin's claim is released.
    await runUntil(() => guard.unsettledCreates().length === 0);
    expect(guard.inFlightClaims).toBe(0);
    expect((await guard.headroom()).cores.inFlight).toBe(0);
    await guard.close();
    expect(liveServers(nova)).toEqual([server.id]);
    expect(guard.stats).toMatchObject({ ambiguousCreates: 1, adoptedServers: 0, lateCreatesDeleted: 1 });
    expect(guard.inFlightClaims).toBe(0);
    // The watch settled within the lost POST's bound (and after the twin's 404).
    expect(Date.now() - t0).toBeLessThanOrEqual(BOUND_MS + OPTS.maxWaitMs!);
  });

  it('the call fails for another reason (the re-sent POST is refused by policy): no server of the call is alive once closed, the twin that lands later deleted too', async () => {
    vi.useFakeTimers();
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', ...GATEWAY_TIMEOUT, delayMs: 500, passThroughAfterMs: 25_000 });
    nova.inject({ method: 'POST', path: '/servers', status: 403, body: { forbidden: { code: 403, message: "Policy doesn't allow os_compute_api:servers:create to be performed." } } });
    const guard = new QuotaGuard(clientOf(nova), OPTS);
    const t0 = Date.now();
    const err = await rejection(settle(guard.createServer(body('ci-1'))));
    expect(err.name).toBe('ForbiddenError');
    expect(Date.now() - t0).toBeLessThan(20_000);
    expect(liveServers(nova)).toEqual([]);
    await runUntil(() => nova.listServerStates().length === 1);
    await settleAndClose(guard);
    expect(liveServers(nova)).toEqual([]);
    expect(guard.stats.lateCreatesDeleted).toBe(1);
    expect(guard.inFlightClaims).toBe(0);
  });

  it('a reset and searches that fail (Nova erroring): today\'s caution, no re-sent POST until a search succeeds; the first clean one lets it go', async () => {
    vi.useFakeTimers();
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', reset: true });
    nova.inject({ method: 'GET', path: '/servers/detail', status: 503, body: 'Service Unavailable', headers: { 'Content-Type': 'text/plain' }, times: 2 });
    const guard = new QuotaGuard(clientOf(nova), OPTS);
    const t0 = Date.now();
    const server = await settle(guard.createServer(body('ci-1')));
    // Searches 5 s apart, doubling: 0 (503), 5000 (503), 15000 (clean), then the POST.
    expect(schedule(nova, t0).slice(0, 5)).toEqual([
      ['POST /servers', 0],
      ['GET /servers/detail', 0],
      ['GET /servers/detail', 5000],
      ['GET /servers/detail', 15000],
      ['POST /servers', 15000],
    ]);
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(2);
    await settleAndClose(guard);
    expect(liveServers(nova)).toEqual([server.id]);
  });

  it('an abort while the lost POST was in flight: one clean search, then no re-sent POST (CreateOutcomeUnknownError naming the tag, watched after the call)', async () => {
    vi.useFakeTimers();
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', hang: true });
    const client = new NovaClient({ endpoint: nova.endpoint, token: `admin:${nova.projectId}`, microversion: '2.79', adapter: nova.adapter, requestTimeoutMs: 2000, retry: { retries: 0 } });
    const guard = new QuotaGuard(client, OPTS);
    const ac = new AbortController();
    const pending = rejection(settle(guard.createServer(body('ci-1'), { signal: ac.signal })));
    await runUntil(() => nova.requestsTo('POST', '/servers').length === 1);
    ac.abort();
    const err = await pending;
    expect(err).toBeInstanceOf(CreateOutcomeUnknownError);
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(1);
    expect(nova.requestsTo('GET', '/servers/detail')).toHaveLength(1);
    expect(guard.unsettledCreates()).toMatchObject([{ claimTag: (err as CreateOutcomeUnknownError).claimTag, callRunning: false }]);
    await guard.close();
    expect(liveServers(nova)).toEqual([]);
  });

  it("the twin's claim is the shared ledger's: taken (claimAnyway, same needs) before the re-sent POST, held while the twin may land, released once its fate is known", async () => {
    vi.useFakeTimers();
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', ...GATEWAY_TIMEOUT, delayMs: 500, passThroughAfterMs: 25_000 });
    const client = clientOf(nova);
    const inner = new InProcessQuotaLedger({ clock: client.clock });
    const ledger = faulty(inner);
    const guard = new QuotaGuard(client, { ...OPTS, ledger });
    const server = await settle(guard.createServer(body('ci-1')));
    expect(ledger.calls.filter(([m]) => m === 'claimAnyway')).toHaveLength(1);
    // The call's own claim ended (its server is counted by Nova); the twin's stays, for flavor 2's 2 cores.
    expect(inner.activeClaims).toBe(1);
    expect(await inner.inFlight(0)).toMatchObject({ cores: 2 });
    await runUntil(() => guard.unsettledCreates().length === 0);
    expect(inner.activeClaims).toBe(0);
    await guard.close();
    expect(liveServers(nova)).toEqual([server.id]);
  });

  it('a ledger that cannot take the twin\'s claim does not stop the re-sent POST (Nova\'s quota check decides; warned once)', async () => {
    vi.useFakeTimers();
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', reset: true });
    const client = clientOf(nova);
    const inner = new InProcessQuotaLedger({ clock: client.clock });
    const ledger = faulty(inner, (m) => (m === 'claimAnyway' ? 'reject' : 'ok'));
    const guard = new QuotaGuard(client, { ...OPTS, ledger });
    const server = await settle(guard.createServer(body('ci-1')));
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(2);
    expect(guard.inFlightClaims).toBe(0);
    await settleAndClose(guard);
    expect(liveServers(nova)).toEqual([server.id]);
  });
});
