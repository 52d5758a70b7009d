/**
 * No server left behind by the guard: a create that reached Nova but whose answer was lost or
 * garbled is found by its claim tag and adopted, re-sent at once with the same tag when a search
 * finds nothing (the tag watched until the lost POST's time surely passed), or reported with its tag. Fake timers, scripted Nova (which creates the server before the fault when
 * a reply says `created: true`).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { InvalidResponseError, NovaNetworkError, RateLimitError, ServerError } from '../../src/errors/index.js';
import { CLAIM_TAG_KEY, CreateOutcomeUnknownError } from '../../src/guard/index.js';
import { exactNamePattern, isAmbiguousCreateError } from '../../src/guard/lostCreate.js';
import { QuotaGuard, type QuotaGuardOptions } from '../../src/guard/quotaGuard.js';
import { FAST, body, liveServers, startNova } from './fixtures.js';
import { NovaClient } from '../../src/nova/client.js';
import { ScriptedNova, onFakeTimers, type Reply } from './scripted.js';
import { rejection, runUntil, settle } from '../helpers.js';

afterEach(() => {
  vi.useRealTimers();
});

const OPTS: QuotaGuardOptions = { ...FAST, jitter: 0, baseDelayMs: 100, minDelayMs: 10, maxDelayMs: 1000, lostCreateIntervalMs: 1000, lostCreateSearches: 4 };

/** POSTs and searches, with their times. */
function posts(nova: ScriptedNova): Array<[string, number]> {
  return nova.sent.filter((r) => (r.method === 'POST' && r.path === '/servers') || r.path === '/servers/detail').map((r) => [`${r.method} ${r.path}`, r.atMs]);
}

const FAULTS: Array<[string, Reply]> = [
  ['a reset', { status: 0, reset: true }],
  ['a 500', { status: 500, body: { computeFault: { code: 500, message: 'Unexpected API Error.' } } }],
  ['a 502 HTML page', { status: 502, body: '<html><body>Bad Gateway</body></html>', headers: { 'content-type': 'text/html' } }],
  ['a 202 with no server body', { status: 202, body: { reservation_id: 'r-1' } }],
  ['a 429 from a proxy', { status: 429, body: '<html>Too Many Requests</html>', headers: { 'content-type': 'text/html', 'Retry-After': '1' } }],
];

describe('a create whose answer was lost or garbled', () => {
  it.each(FAULTS)('%s after Nova created it: the guard finds it by its tag and adopts it (1 POST, no second server)', async (_what, fault) => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    nova.reply('POST /servers', { ...fault, created: true });
    const guard = new QuotaGuard(nova.client(), OPTS);
    const server = await onFakeTimers(guard.createServer(body('ci-1')));
    expect(server.id).toBe('00000001-0000-4000-8000-000000000000');
    expect(posts(nova)).toEqual([
      ['POST /servers', 0],
      ['GET /servers/detail', 0],
    ]);
    expect(nova.liveServers()).toHaveLength(1);
    expect(nova.liveServers()[0]!.metadata[CLAIM_TAG_KEY]).toMatch(/^[0-9a-f-]{36}$/);
    expect(guard.stats).toMatchObject({ ambiguousCreates: 1, adoptedServers: 1, succeeded: 1, failed: 0 });
    expect(guard.inFlightClaims).toBe(0);
  });

  it("a 500 with Nova's fault body and request id when nothing was created: nova-api is done with it, so one clean search settles it and the POST is re-sent at once", async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    nova.reply('POST /servers', FAULTS[1]![1]);
    const guard = new QuotaGuard(nova.client(), OPTS);
    const server = await onFakeTimers(guard.createServer(body('ci-1')));
    expect(server.id).toBe('00000001-0000-4000-8000-000000000000');
    expect(posts(nova)).toEqual([
      ['POST /servers', 0],
      ['GET /servers/detail', 0],
      ['POST /servers', 0],
    ]);
    expect(nova.liveServers().map((s) => s.id)).toEqual(['00000001-0000-4000-8000-000000000000']);
    expect(guard.stats).toMatchObject({ ambiguousCreates: 1, adoptedServers: 0, attempts: 1 });
    // The clean search started after the POST's time surely passed: no twin to watch, no claim for one.
    expect(guard.inFlightClaims).toBe(0);
    expect(guard.unsettledCreates()).toEqual([]);
  });

  it.each(FAULTS.filter(([what]) => !what.includes('429') && !what.includes('500')))(
    "%s (not Nova's own answer) when nothing was created: one clean search, the POST re-sent at once with the same tag; the tag watched (a claim held for a twin) until the first POST's time surely passed (30000 ms request limit + novaApiTimeoutMs 5000)",
    async (_what, fault) => {
      vi.useFakeTimers();
      const nova = new ScriptedNova();
      nova.reply('POST /servers', fault);
      const guard = new QuotaGuard(nova.client(), { ...OPTS, maxWaitMs: 60000, novaApiTimeoutMs: 5000 });
      const server = await onFakeTimers(guard.createServer(body('ci-1')));
      expect(server.id).toBe('00000001-0000-4000-8000-000000000000');
      expect(posts(nova)).toEqual([
        ['POST /servers', 0],
        ['GET /servers/detail', 0],
        ['POST /servers', 0],
      ]);
      expect(guard.unsettledCreates()).toMatchObject([{ posts: 2, serversSeen: 1, keptServerId: server.id, callRunning: false, boundInMs: 35000 }]);
      // One more claim stands for a server the first POST may still make.
      expect(guard.inFlightClaims).toBe(1);
      await vi.advanceTimersByTimeAsync(35000);
      // The watch after the call: searches 1000 ms apart, doubling, the last where the bound passes.
      expect(posts(nova).slice(3)).toEqual([
        ['GET /servers/detail', 1000],
        ['GET /servers/detail', 3000],
        ['GET /servers/detail', 7000],
        ['GET /servers/detail', 15000],
        ['GET /servers/detail', 31000],
        ['GET /servers/detail', 35000],
      ]);
      expect(nova.liveServers().map((s) => s.id)).toEqual(['00000001-0000-4000-8000-000000000000']);
      expect(guard.stats).toMatchObject({ ambiguousCreates: 1, adoptedServers: 0, attempts: 1 });
      expect(guard.inFlightClaims).toBe(0);
      expect(guard.unsettledCreates()).toEqual([]);
    },
  );

  it('a proxy 429 when nothing was created: after the clean searches, the rate-limit path re-sends it (Retry-After)', async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    nova.reply('POST /servers', FAULTS[4]![1]);
    const guard = new QuotaGuard(nova.client(), OPTS);
    const server = await onFakeTimers(guard.createServer(body('ci-1')));
    expect(server.id).toBe('00000001-0000-4000-8000-000000000000');
    expect(posts(nova)).toEqual([
      ['POST /servers', 0],
      ['GET /servers/detail', 0],
      ['GET /servers/detail', 1000],
      ['POST /servers', 2000],
    ]);
    expect(guard.stats).toMatchObject({ rateLimitRetries: 1, ambiguousCreates: 1, adoptedServers: 0 });
  });

  it("Nova's own overLimit 429 created nothing: no search, re-sent after Retry-After", async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    nova.reply('POST /servers', { status: 429, headers: { 'Retry-After': '1' }, body: { overLimit: { code: 429, message: 'This request was rate-limited.' } } });
    const guard = new QuotaGuard(nova.client(), OPTS);
    await onFakeTimers(guard.createServer(body('ci-1')));
    expect(posts(nova)).toEqual([
      ['POST /servers', 0],
      ['POST /servers', 1000],
    ]);
    expect(guard.stats.ambiguousCreates).toBe(0);
  });

  it('the re-sent POST is lost too and nothing was created: its error is thrown after 2 POSTs, nothing left, claim ended', async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    nova.reply('POST /servers', FAULTS[1]![1], FAULTS[1]![1]);
    const guard = new QuotaGuard(nova.client(), OPTS);
    const err = await rejection(onFakeTimers(guard.createServer(body('ci-1'))));
    expect(err).toBeInstanceOf(ServerError);
    // The first lost answer: one clean search, then the POST again; the second: two clean searches (Nova's own 500: its bound has passed).
    expect(posts(nova).map(([r]) => r)).toEqual(['POST /servers', 'GET /servers/detail', 'POST /servers', 'GET /servers/detail', 'GET /servers/detail']);
    expect(nova.liveServers()).toEqual([]);
    expect(guard.inFlightClaims).toBe(0);
  });

  it('a lost POST listed late and the re-sent one lost too: both found by the tag, the first adopted, the duplicate deleted', async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    const lost: Reply = { status: 500, body: { computeFault: { code: 500, message: 'Unexpected API Error.' } }, created: true };
    nova.reply('POST /servers', lost, lost);
    // Nova lists the first server late: the first two searches miss it.
    nova.reply('GET /servers/detail', { status: 200, body: { servers: [] } }, { status: 200, body: { servers: [] } });
    const guard = new QuotaGuard(nova.client(), OPTS);
    const server = await onFakeTimers(guard.createServer(body('ci-1')));
    expect(server.id).toBe('00000001-0000-4000-8000-000000000000');
    expect(nova.sent.filter((r) => r.method === 'DELETE').map((r) => r.path)).toEqual(['/servers/00000002-0000-4000-8000-000000000000']);
    expect(nova.liveServers().map((s) => s.id)).toEqual(['00000001-0000-4000-8000-000000000000']);
    expect(guard.stats).toMatchObject({ ambiguousCreates: 2, adoptedServers: 1, cleanups: 1 });
    expect(guard.inFlightClaims).toBe(0);
  });

  it('searches that keep failing: CreateOutcomeUnknownError naming the tag the server carries; bounded searches; claim ended as counted', async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    nova.reply('POST /servers', { status: 0, reset: true, created: true });
    for (let i = 0; i < 4; i++) nova.reply('GET /servers/detail', { status: 503, body: 'Service Unavailable', headers: { 'content-type': 'text/plain' } });
    const guard = new QuotaGuard(nova.client(), OPTS);
    const err = await rejection(onFakeTimers(guard.createServer(body('ci-1'))));
    expect(err).toBeInstanceOf(CreateOutcomeUnknownError);
    const e = err as CreateOutcomeUnknownError;
    expect(e.name).toBe('CreateOutcomeUnknownError');
    expect(e.serverName).toBe('ci-1');
    expect(e.searches).toBe(4);
    expect(e.cause).toBeInstanceOf(NovaNetworkError);
    expect(e.claimTag).toBe(nova.liveServers()[0]!.metadata[CLAIM_TAG_KEY]);
    expect(e.message).toContain(`nova-guard-claim=${e.claimTag}`);
    // Spaced 1000 ms apart and doubling (a failing Nova gets fewer requests), never past maxWaitMs (5000).
    expect(posts(nova)).toEqual([
      ['POST /servers', 0],
      ['GET /servers/detail', 0],
      ['GET /servers/detail', 1000],
      ['GET /servers/detail', 3000],
      ['GET /servers/detail', 5000],
    ]);
    expect(guard.inFlightClaims).toBe(0);
  });

  it('an abort during the search does not hide the tag: CreateOutcomeUnknownError, not a bare AbortError', async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    nova.reply('POST /servers', { status: 0, reset: true, created: true });
    for (let i = 0; i < 4; i++) nova.reply('GET /servers/detail', { status: 503, body: 'Service Unavailable', headers: { 'content-type': 'text/plain' } });
    const guard = new QuotaGuard(nova.client(), OPTS);
    const ac = new AbortController();
    const pending = rejection(onFakeTimers(guard.createServer(body('ci-1'), { signal: ac.signal })));
    await vi.advanceTimersByTimeAsync(500);
    ac.abort();
    const err = await pending;
    expect(err).toBeInstanceOf(CreateOutcomeUnknownError);
    expect((err as CreateOutcomeUnknownError).claimTag).toBe(nova.liveServers()[0]!.metadata[CLAIM_TAG_KEY]);
  });

  it("the caller's metadata is kept beside the tag; the search asks for the exact name", async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    nova.reply('POST /servers', { status: 500, body: {}, created: true });
    const guard = new QuotaGuard(nova.client(), OPTS);
    await onFakeTimers(guard.createServer({ ...body('ci.1+x'), metadata: { job: '42' } }));
    expect(nova.liveServers()[0]!.metadata).toMatchObject({ job: '42', [CLAIM_TAG_KEY]: expect.any(String) });
    expect(exactNamePattern('ci.1+x')).toBe('^ci\\.1\\+x$');
    expect(new RegExp(exactNamePattern('ci.1+x')).test('ciX1+x')).toBe(false);
  });
});

describe('isAmbiguousCreateError', () => {
  it('no answer (not refused), 5xx, a garbled 2xx and a proxy 429 are ambiguous; Nova overLimit, refused, 4xx are not', () => {
    expect(isAmbiguousCreateError(new NovaNetworkError({ status: 0, message: 'reset', code: 'ECONNRESET' }))).toBe(true);
    expect(isAmbiguousCreateError(new NovaNetworkError({ status: 0, message: 'timeout', code: 'ETIMEDOUT', timedOut: true }))).toBe(true);
    expect(isAmbiguousCreateError(new NovaNetworkError({ status: 0, message: 'refused', code: 'ECONNREFUSED' }))).toBe(false);
    expect(isAmbiguousCreateError(new ServerError({ status: 502, message: 'bad gateway' }))).toBe(true);
    expect(isAmbiguousCreateError(new InvalidResponseError({ status: 202, message: 'no server' }))).toBe(true);
    expect(isAmbiguousCreateError(new RateLimitError({ status: 429, message: 'proxy' }))).toBe(true);
    expect(isAmbiguousCreateError(new RateLimitError({ status: 429, fault: 'overLimit', message: 'nova' }))).toBe(false);
    expect(isAmbiguousCreateError(new Error('x'))).toBe(false);
  });
});

describe('FakeNova: a POST past the request timeout', () => {
  it('the client gave up and Nova dropped the request: one clean search, the POST re-sent at once; the tag watched until the first POST\'s time surely passed (1000 ms limit + novaApiTimeoutMs 3000); exactly one server', async () => {
    vi.useFakeTimers();
    const nova = await startNova();
    const client = new NovaClient({ endpoint: nova.endpoint, token: `admin:${nova.projectId}`, microversion: '2.79', adapter: nova.adapter, requestTimeoutMs: 1000, retry: { retries: 0 } });
    // The POST would reach Nova's handler 1500 ms late: the client's 1000 ms request timeout ends it first.
    nova.inject({ method: 'POST', path: '/servers', delayMs: 1500 });
    const guard = new QuotaGuard(client, { ...OPTS, lostCreateIntervalMs: 2000, novaApiTimeoutMs: 3000 });
    const t0 = Date.now();
    const server = await settle(guard.createServer(body('ci-1')));
    expect(guard.stats).toMatchObject({ ambiguousCreates: 1, adoptedServers: 0 });
    expect(nova.requestsTo('POST', '/servers').map((r) => r.timeMs - t0)).toEqual([0, 1000]);
    await runUntil(() => guard.unsettledCreates().length === 0);
    // At 1000 (the timeout), then the watch's: one 2000 ms later, one at the bound (4000).
    expect(nova.requestsTo('GET', '/servers/detail').map((r) => r.timeMs - t0)).toEqual([1000, 3000, 4000]);
    expect(liveServers(nova)).toEqual([server.id]);
    expect(server.status).toBe('ACTIVE');
    expect(guard.inFlightClaims).toBe(0);
  });
});
