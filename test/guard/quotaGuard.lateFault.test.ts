/**
 * QuotaGuard after the 202: late quota faults (Nova's recheck race), other ERRORs, BUILD timeouts,
 * aborts at every stage, and no server the guard created left behind. On fake timers, through
 * FakeNova's in-process adapter (or a scripted Nova).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AbortError, ConflictError, NovaApiError, NovaGuardError, QuotaExceededError } from '../../src/errors/index.js';
import { QuotaBuildFaultError, ServerBuildError } from '../../src/guard/index.js';
import type { QuotaRetryInfo } from '../../src/guard/quotaGuard.js';
import { body, guardFor, limitsAndPosts, liveServers, posts, startNova } from './fixtures.js';
import { clientFor, rejection, settle, useFakeClock } from '../helpers.js';
import { QuotaGuard } from '../../src/guard/quotaGuard.js';
import { FAST } from './fixtures.js';
import { ScriptedNova } from './scripted.js';

useFakeClock();
afterEach(() => {
  vi.useRealTimers();
});

/** Let `ms` fake ms pass. */
const sleep = async (ms: number): Promise<void> => {
  await vi.advanceTimersByTimeAsync(ms);
};

describe('late quota fault (202, then ERROR)', () => {
  it("recheck race: the ERROR server is deleted (with wait), a second server is created and returned", async () => {
    const nova = await startNova({ buildDelayMs: 10, deleteDelayMs: 10 });
    nova.failCreatesWithQuotaRecheck(1);
    const retries: QuotaRetryInfo[] = [];
    const guard = guardFor(nova, { onRetry: (r) => void retries.push(r) });
    const server = await settle(guard.createServer(body('late')));

    const p = posts(nova);
    expect(p.map((r) => r.status)).toEqual([202, 202]);
    const first = p[0]!.serverId!;
    expect(server.id).toBe(p[1]!.serverId);
    expect(server.id).not.toBe(first);
    expect(server.status).toBe('ACTIVE');
    expect(typeof server.adminPass === 'string' || server.adminPass === undefined).toBe(true);
    // The ERROR server was deleted and waited for (404) before the second POST.
    expect(nova.requestsTo('DELETE', `/servers/${first}`)).toHaveLength(1);
    const gone = nova.requestsTo('GET', `/servers/${first}`).filter((r) => r.status === 404);
    expect(gone.length).toBeGreaterThanOrEqual(1);
    expect(gone[0]!.timeMs).toBeLessThanOrEqual(p[1]!.timeMs);
    expect(nova.getServerState(first)).toBeUndefined();
    expect(liveServers(nova)).toEqual([server.id]);
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatchObject({ reason: 'late-quota-fault', attempt: 1, serverId: first });
    const e = retries[0]!.error as QuotaBuildFaultError;
    expect(e).toBeInstanceOf(QuotaBuildFaultError);
    expect(e).not.toBeInstanceOf(QuotaExceededError);
    expect(e.faultMessage).toContain('Quota exceeded for cores');
    expect(e.permanent).toBe(false);
    expect(e.resources).toEqual([{ name: 'cores', requested: 2, used: 20, allowed: 20 }]);
    expect(e.cause).toBeInstanceOf(ServerBuildError);
    expect((e.cause as ServerBuildError).deleted).toBe(true);
    expect(guard.stats).toMatchObject({ succeeded: 1, lateQuotaFaults: 1, cleanups: 1, attempts: 2 });
    expect(guard.inFlightClaims).toBe(0);
  });

  it("build-aborted fault naming another service's quota (nodepool's 'exceeds' + 'quota') is retried the same way", async () => {
    const nova = await startNova({ buildDelayMs: 5 });
    nova.failCreatesWithQuotaRecheck(
      1,
      'Build of instance 11111111-aaaa-4bbb-8ccc-000000000014 aborted: VolumeSizeExceedsAvailableQuota: Requested volume or snapshot exceeds allowed gigabytes quota.',
    );
    const retries: QuotaRetryInfo[] = [];
    const guard = guardFor(nova, { onRetry: (r) => void retries.push(r) });
    const server = await settle(guard.createServer(body('late2')));
    expect(posts(nova)).toHaveLength(2);
    expect(retries.map((r) => r.reason)).toEqual(['late-quota-fault']);
    expect(liveServers(nova)).toEqual([server.id]);
  });

  it('late quota faults every time: bounded by maxAttempts, every ERROR server deleted', async () => {
    const nova = await startNova({ buildDelayMs: 2 });
    nova.failCreatesWithQuotaRecheck(10);
    const guard = guardFor(nova, { maxAttempts: 3 });
    const err = await rejection(settle(guard.createServer(body('late3'))));
    expect(err).toBeInstanceOf(QuotaBuildFaultError);
    expect((err as QuotaBuildFaultError).permanent).toBe(false);
    expect((err as QuotaBuildFaultError).serverId).toBe(posts(nova)[2]!.serverId);
    expect(posts(nova)).toHaveLength(3);
    expect(nova.requestsTo('DELETE', /^\/servers\/[^/]+$/)).toHaveLength(3);
    expect(liveServers(nova)).toEqual([]);
    expect(nova.usage()).toEqual({ cores: 0, instances: 0, ramMiB: 0, ram: 0 });
  });

  it('any other ERROR: deleted with wait, then ServerBuildError with Nova\'s fault; exactly 1 POST', async () => {
    const nova = await startNova({ buildDelayMs: 5 });
    const fault = 'Exceeded maximum number of retries. Exhausted all hosts available for retrying build failures for instance x.';
    nova.failCreatesWithQuotaRecheck(1, fault);
    const guard = guardFor(nova);
    const err = await rejection(settle(guard.createServer(body('bad'))));
    expect(err).toBeInstanceOf(ServerBuildError);
    // The guard's verdict, not an HTTP error.
    expect(err).toBeInstanceOf(NovaGuardError);
    expect(err).not.toBeInstanceOf(NovaApiError);
    const e = err as ServerBuildError;
    const id = posts(nova)[0]!.serverId!;
    expect(e).toMatchObject({ serverId: id, reason: 'error', lastStatus: 'ERROR', faultMessage: fault, deleted: true, cleanupError: undefined });
    expect(e.message).toBe(`Server ${id} went to ERROR: ${fault} (the server was deleted)`);
    expect(posts(nova)).toHaveLength(1);
    expect(nova.requestsTo('DELETE', `/servers/${id}`)).toHaveLength(1);
    expect(liveServers(nova)).toEqual([]);
  });

  it('ERROR server that cannot be deleted: ServerBuildError says it is left behind, no retry', async () => {
    const nova = await startNova({ buildDelayMs: 5 });
    nova.failCreatesWithQuotaRecheck(1);
    nova.inject({ method: 'DELETE', path: /^\/servers\//, status: 409, body: { conflictingRequest: { code: 409, message: 'Instance x is locked' } } });
    const guard = guardFor(nova);
    const err = await rejection(settle(guard.createServer(body('stuck'))));
    expect(err).toBeInstanceOf(ServerBuildError);
    expect((err as ServerBuildError).deleted).toBe(false);
    expect((err as ServerBuildError).cleanupError).toBeInstanceOf(ConflictError);
    expect((err as ServerBuildError).cleanupError?.name).toBe('ConflictError');
    expect(err.message).toContain('could NOT be deleted and is left behind');
    expect(posts(nova)).toHaveLength(1);
  });

  it('still BUILD after activeTimeoutMs: deleted, ServerBuildError reason timeout', async () => {
    const nova = await startNova({ buildDelayMs: 60000 });
    // Looks every 5 ms go through the client's one rate limit (the ACTIVE wait reads the client's
    // watcher): without a limit here, the DELETE is not held behind 16 looks' turns.
    const guard = guardFor(nova, { activeTimeoutMs: 80 }, clientFor(nova, { maxRequestsPerSecond: Infinity }));
    const started = performance.now();
    const startedWall = Date.now();
    const err = await rejection(settle(guard.createServer(body('slow'))));
    expect(performance.now() - started).toBeGreaterThanOrEqual(80);
    // On the fake clock: the server is given up on, and its DELETE sent, at exactly activeTimeoutMs.
    const id = posts(nova)[0]!.serverId!;
    expect(nova.requestsTo('DELETE', `/servers/${id}`).map((r) => r.timeMs - startedWall)).toEqual([80]);
    expect(err).toBeInstanceOf(ServerBuildError);
    expect(err).toMatchObject({ reason: 'timeout', lastStatus: 'BUILD', deleted: true });
    expect(liveServers(nova)).toEqual([]);
    expect(guard.inFlightClaims).toBe(0);
  });

  it('server deleted by someone else while building: ServerBuildError reason gone', async () => {
    const nova = await startNova({ buildDelayMs: 60000 });
    const guard = guardFor(nova);
    const run = guard.createServer(body('vanish'));
    for (let i = 0; i < 500 && posts(nova).filter((p) => p.status === 202).length === 0; i++) await sleep(2);
    nova.destroyServer(posts(nova)[0]!.serverId!);
    const err = await rejection(settle(run));
    expect(err).toBeInstanceOf(ServerBuildError);
    expect(err).toMatchObject({ name: 'ServerBuildError', reason: 'gone', lastStatus: 'NOT_FOUND' });
    expect(posts(nova)).toHaveLength(1);
  });
});

describe('abort, at every stage', () => {
  it('while waiting for headroom: AbortError at once, 0 POSTs', async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    nova.absolute = { maxTotalCores: 2, totalCoresUsed: 2 };
    const guard = new QuotaGuard(nova.client(), { ...FAST, baseDelayMs: 5000, minDelayMs: 5000, maxDelayMs: 5000 });
    const ac = new AbortController();
    const run = guard.createServer(body('x'), { signal: ac.signal });
    const settled = rejection(run);
    await vi.advanceTimersByTimeAsync(50);
    const t = performance.now();
    ac.abort(new Error('job cancelled'));
    const err = await settled;
    expect(performance.now() - t).toBeLessThan(100);
    expect(performance.now() - t).toBe(0);
    expect(err).toBeInstanceOf(AbortError);
    expect((err as AbortError).cause).toEqual(new Error('job cancelled'));
    expect(nova.posts()).toHaveLength(0);
    expect(nova.schedule()).toEqual([['GET /limits', 0]]);
    expect(guard.inFlightClaims).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('before the call: AbortError, no request', async () => {
    const nova = await startNova();
    const ac = new AbortController();
    ac.abort();
    const err = await rejection(settle(guardFor(nova).createServer(body('x'), { signal: ac.signal })));
    expect(err).toBeInstanceOf(AbortError);
    expect(nova.requests).toHaveLength(0);
  });

  it('while waiting for ACTIVE: the server is deleted, then AbortError', async () => {
    const nova = await startNova({ buildDelayMs: 60000, deleteDelayMs: 5 });
    const guard = guardFor(nova);
    const ac = new AbortController();
    const run = guard.createServer(body('x'), { signal: ac.signal });
    for (let i = 0; i < 500 && posts(nova).filter((p) => p.status === 202).length === 0; i++) await sleep(2);
    await sleep(20);
    ac.abort();
    const err = await rejection(settle(run));
    const id = posts(nova)[0]!.serverId!;
    expect(err).toBeInstanceOf(AbortError);
    expect(err.message).toBe(`The operation was aborted; server ${id} was deleted`);
    expect(nova.requestsTo('DELETE', `/servers/${id}`)).toHaveLength(1);
    expect(liveServers(nova)).toEqual([]);
  });

  it('during the POST: the POST completes, the created server is deleted, then AbortError', async () => {
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', delayMs: 100 });
    const guard = guardFor(nova);
    const ac = new AbortController();
    const run = guard.createServer(body('x'), { signal: ac.signal });
    // Abort while the POST is pending at the fake (recorded with status 0 until answered).
    for (let i = 0; i < 500 && posts(nova).length === 0; i++) await sleep(2);
    expect(posts(nova).map((p) => p.status)).toEqual([0]);
    ac.abort();
    const err = await rejection(settle(run));
    expect(err).toBeInstanceOf(AbortError);
    expect(posts(nova).map((p) => p.status)).toEqual([202]);
    const id = posts(nova)[0]!.serverId!;
    expect(nova.requestsTo('DELETE', `/servers/${id}`)).toHaveLength(1);
    expect(liveServers(nova)).toEqual([]);
  });

  it('during a quota backoff: AbortError, one POST, nothing left', async () => {
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', status: 403, body: { forbidden: { code: 403, message: 'Quota exceeded for cores: Requested 2, but already used 20 of 20 cores' } } });
    const guard = guardFor(nova, { baseDelayMs: 5000, minDelayMs: 5000, maxDelayMs: 5000 });
    const ac = new AbortController();
    const run = guard.createServer(body('x'), { signal: ac.signal });
    for (let i = 0; i < 500 && posts(nova).length === 0; i++) await sleep(2);
    await sleep(20);
    ac.abort();
    const err = await rejection(settle(run));
    expect(err).toBeInstanceOf(AbortError);
    expect(limitsAndPosts(nova)).toEqual(['GET /limits', 'POST /servers']);
  });
});

describe('waitForActive: false', () => {
  it('returns after the 202; the claim holds until a later read sees the server past scheduling (still in BUILD)', async () => {
    const nova = await startNova({ buildDelayMs: 300, schedulingDelayMs: 60, maxTotalCores: 4 });
    const guard = guardFor(nova, { waitForActive: false });
    const s = await settle(guard.createServer(body('nowait')));
    expect(s.status).toBeUndefined(); // the POST body has no status
    expect(nova.getServerState(s.id)?.status).toBe('BUILD');
    expect(guard.inFlightClaims).toBe(1);
    const h1 = await guard.headroom();
    // Still scheduling: the claim counts (Nova may not count the server yet).
    expect(h1.cores.inFlight).toBe(2);
    expect(guard.inFlightClaims).toBe(1);
    await sleep(100);
    expect(nova.getServerState(s.id)?.status).toBe('BUILD');
    const h2 = await guard.headroom();
    // Past scheduling, still in BUILD: Nova counts it, the claim has ended (not subtracted twice).
    expect(h2.cores).toEqual({ max: 4, used: 2, inFlight: 0, headroom: 2 });
    expect(guard.inFlightClaims).toBe(0);
    expect(nova.requestsTo('GET', `/servers/${s.id}`).length).toBe(2);
  });
});
