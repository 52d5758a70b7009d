/**
 * The guard's one retry policy (plain data in, plain data out), and how p-retry runs it on fake
 * timers against a scripted Nova.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ForbiddenError, NovaNetworkError, QuotaExceededError, RateLimitError } from '../../src/errors/index.js';
import { QuotaBuildFaultError, QuotaWaitTimeoutError, ServerBuildError } from '../../src/guard/index.js';
import { planRetry, quotaRetryReasonOf, type FailedAttempt } from '../../src/guard/retryPolicy.js';
import { QuotaGuard, type QuotaRetryInfo } from '../../src/guard/quotaGuard.js';
import { FAST, body } from './fixtures.js';
import { ScriptedNova, onFakeTimers } from './scripted.js';
import { rejection } from '../helpers.js';

afterEach(() => {
  vi.useRealTimers();
});

const MSG = 'Quota exceeded for cores: Requested 2, but already used 514 of 515 cores';
const limits = { maxAttempts: 3, maxDelayMs: 60000, firstDelayMs: 2000 };
const failed = (over: Partial<FailedAttempt>): FailedAttempt => ({ error: new Error('x'), refusal: undefined, retriesConsumed: 0, freeRetries: 0, remainingMs: 600000, aborted: false, ...over });
const quota = (init: { retryAfterMs?: number; cause?: unknown } = {}): QuotaExceededError => new QuotaExceededError({ status: 403, message: MSG, ...init });
const rateLimit = (retryAfterMs?: number): RateLimitError =>
  new RateLimitError({ status: 429, message: 'This request was rate-limited.', ...(retryAfterMs === undefined ? {} : { retryAfterMs }) });

describe('planRetry', () => {
  it('a transient quota error uses an attempt; p-retry waits the backoff (first delay × 2^n)', () => {
    expect(planRetry(failed({ error: quota() }), limits)).toEqual({ retry: true, consume: true, reason: 'quota', attempt: 1, attemptsLeft: 2, delayMs: 2000, ownWaitMs: 0 });
    expect(planRetry(failed({ error: quota(), retriesConsumed: 1 }), limits)).toMatchObject({ retry: true, attempt: 2, attemptsLeft: 1, delayMs: 4000, ownWaitMs: 0 });
  });

  it('maxAttempts, maxWaitMs and an abort end the retries', () => {
    expect(planRetry(failed({ error: quota(), retriesConsumed: 2 }), limits)).toMatchObject({ retry: false, consume: true, why: 'maxAttempts spent', attemptsLeft: 0 });
    expect(planRetry(failed({ error: quota(), remainingMs: 0 }), limits)).toMatchObject({ retry: false, why: 'maxWaitMs spent' });
    expect(planRetry(failed({ error: quota(), aborted: true }), limits)).toMatchObject({ retry: false, why: 'aborted' });
    // The delay is cut at the deadline.
    expect(planRetry(failed({ error: quota(), remainingMs: 500.2 }), limits)).toMatchObject({ retry: true, delayMs: 501 });
  });

  it('a late quota fault (QuotaBuildFaultError, cause ServerBuildError) is retried as late-quota-fault; a permanent one is not', () => {
    const cause = new ServerBuildError({ serverId: 's1', reason: 'error', lastStatus: 'ERROR', faultMessage: MSG, elapsedMs: 5, deleted: true });
    const late = (permanent: boolean): QuotaBuildFaultError => new QuotaBuildFaultError({ serverId: 's1', faultMessage: MSG, resources: [], permanent, cause });
    expect(planRetry(failed({ error: late(false) }), limits)).toMatchObject({ retry: true, consume: true, reason: 'late-quota-fault', delayMs: 2000 });
    expect(planRetry(failed({ error: late(true) }), limits)).toMatchObject({ retry: false });
  });

  it('a rate-limited POST uses no attempt: the guard waits Retry-After (at least the backoff, growing), p-retry adds nothing', () => {
    expect(planRetry(failed({ error: rateLimit(100), refusal: 'rate-limited' }), { ...limits, firstDelayMs: 10 })).toEqual({
      retry: true,
      consume: false,
      reason: 'rate-limit',
      attempt: 1,
      attemptsLeft: 2,
      delayMs: 100,
      ownWaitMs: 100,
    });
    // Without Retry-After (a proxy's 429): the backoff, doubling with each such retry.
    expect(planRetry(failed({ error: rateLimit(), refusal: 'rate-limited' }), limits).delayMs).toBe(2000);
    expect(planRetry(failed({ error: rateLimit(), refusal: 'rate-limited', freeRetries: 2 }), limits).delayMs).toBe(8000);
    // Still no attempt used when the attempts are spent.
    expect(planRetry(failed({ error: rateLimit(100), refusal: 'rate-limited', retriesConsumed: 2 }), limits)).toMatchObject({ retry: true, consume: false });
  });

  it('a read of the admission rate-limited: read again after its Retry-After, no attempt used; given up when it does not fit', () => {
    expect(planRetry(failed({ error: rateLimit(120_000), refusal: 'read-rate-limited', remainingMs: 300_000 }), limits)).toMatchObject({ retry: true, consume: false, reason: 'rate-limit', delayMs: 120_000, ownWaitMs: 120_000 });
    expect(planRetry(failed({ error: rateLimit(400_000), refusal: 'read-rate-limited', remainingMs: 300_000 }), limits)).toMatchObject({ retry: false, why: 'Retry-After beyond maxWaitMs' });
  });

  it('a Retry-After not shorter than what is left of maxWaitMs ends the retries at once', () => {
    expect(planRetry(failed({ error: rateLimit(5000), refusal: 'rate-limited', remainingMs: 4000 }), limits)).toMatchObject({ retry: false, why: 'Retry-After beyond maxWaitMs' });
  });

  it('a refused connection is re-sent without using an attempt and without an onRetry reason', () => {
    const refused = new NovaNetworkError({ status: 0, message: 'connect ECONNREFUSED', code: 'ECONNREFUSED' });
    expect(planRetry(failed({ error: refused, refusal: 'refused' }), limits)).toMatchObject({ retry: true, consume: false, reason: undefined, delayMs: 2000, ownWaitMs: 2000 });
  });

  it('permanent quota errors, other 403s, rate limits not from the POST and the guard verdicts are not retried', () => {
    const permanent = new QuotaExceededError({ status: 403, message: 'Quota exceeded for cores: Requested 32, but already used 0 of 20 cores' });
    const policy = new ForbiddenError({ status: 403, message: "Policy doesn't allow os_compute_api:servers:create to be performed." });
    for (const error of [permanent, policy, rateLimit(100), new Error('boom'), new TypeError('bug')]) {
      expect(planRetry(failed({ error }), limits)).toMatchObject({ retry: false, consume: true });
    }
    expect(quotaRetryReasonOf(new Error('ERROR (Forbidden): Quota exceeded for instances: Requested 1, but already used 10 of 10 instances (HTTP 403)'))).toBe('quota');
    const timeout = new QuotaWaitTimeoutError({
      message: MSG,
      resources: [],
      waitedMs: 1,
      maxWaitMs: 1,
      limitsReads: 1,
      headroom: undefined as never,
      needs: { cores: 2, ramMiB: 2048, instances: 1 },
    });
    expect(quotaRetryReasonOf(timeout)).toBeUndefined();
  });
});

describe('p-retry runs the policy (fake timers, scripted Nova)', () => {
  it('a rate limit whose Retry-After outlasts maxWaitMs is thrown at once: one POST, no wait', async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    nova.reply('POST /servers', { status: 429, headers: { 'Retry-After': '10' }, body: { overLimit: { code: 429, message: 'This request was rate-limited.' } } });
    const retries: QuotaRetryInfo[] = [];
    const guard = new QuotaGuard(nova.client(), { ...FAST, maxWaitMs: 5000, waitForActive: false, onRetry: (r) => void retries.push(r) });
    const started = performance.now();
    let endedAt = Number.NaN;
    // The call's own end (its claim tag is watched after it: a later timer is the watch's).
    const err = await rejection(onFakeTimers(guard.createServer(body('x')).finally(() => (endedAt = performance.now()))));
    expect(err).toBeInstanceOf(RateLimitError);
    expect(err.message).toMatch(/^POST \S+\/servers was rate-limited with Retry-After 10000 ms, not shorter than what is left of maxWaitMs \(5000 of 5000 ms\): given up at once \(This request was rate-limited\.\)$/);
    expect((err as RateLimitError).retryAfterMs).toBe(10_000);
    expect(endedAt - started).toBe(0);
    expect(nova.schedule()).toEqual([
      ['GET /limits', 0],
      ['POST /servers', 0],
    ]);
    expect(retries).toEqual([]);
    expect(guard.inFlightClaims).toBe(0);
  });

  it('quota 403s on every POST: exactly maxAttempts POSTs, each after a fresh /limits read, at the doubling backoff', async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    for (let i = 0; i < 3; i++) nova.reply('POST /servers', { status: 403, body: { forbidden: { code: 403, message: MSG } } });
    const guard = new QuotaGuard(nova.client(), { ...FAST, maxAttempts: 3, baseDelayMs: 100, minDelayMs: 10, maxDelayMs: 1000, jitter: 0 });
    const err = await rejection(onFakeTimers(guard.createServer(body('x'))));
    expect(err).toBeInstanceOf(QuotaExceededError);
    expect((err as QuotaExceededError).permanent).toBe(false);
    expect(nova.schedule()).toEqual([
      ['GET /limits', 0],
      ['POST /servers', 0],
      ['GET /limits', 100],
      ['POST /servers', 100],
      ['GET /limits', 300],
      ['POST /servers', 300],
    ]);
    expect(guard.stats).toMatchObject({ attempts: 3, quota403s: 3, quotaRetries: 2, failed: 1 });
  });

  it('a quota 403 with a Retry-After above the backoff waits the Retry-After (at most maxDelayMs)', async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    nova.reply('POST /servers', { status: 403, headers: { 'Retry-After': '0.5' }, body: { forbidden: { code: 403, message: MSG } } });
    nova.reply('POST /servers', { status: 403, headers: { 'Retry-After': '5' }, body: { forbidden: { code: 403, message: MSG } } });
    const guard = new QuotaGuard(nova.client(), { ...FAST, baseDelayMs: 100, minDelayMs: 10, maxDelayMs: 1000, jitter: 0, waitForActive: false });
    await onFakeTimers(guard.createServer(body('x')));
    expect(nova.schedule().map(([, t]) => t)).toEqual([0, 0, 500, 500, 1500, 1500]);
  });
  it('a rate-limited POST on the last attempt is still re-sent (it uses no attempt): maxAttempts 1, the re-sent POST creates the server', async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    nova.reply('POST /servers', { status: 429, headers: { 'Retry-After': '2' }, body: { overLimit: { code: 429, message: 'This request was rate-limited.' } } });
    const guard = new QuotaGuard(nova.client(), { ...FAST, maxAttempts: 1, baseDelayMs: 100, minDelayMs: 10, maxDelayMs: 10_000, jitter: 0, waitForActive: false });
    const server = await onFakeTimers(guard.createServer(body('x')));
    expect(server.id).toBeTruthy();
    expect(nova.schedule()).toEqual([
      ['GET /limits', 0],
      ['POST /servers', 0],
      ['POST /servers', 2000],
    ]);
    expect(guard.stats).toMatchObject({ attempts: 1, rateLimitRetries: 1, succeeded: 1, failed: 0 });
  });

  it("a rate limit thrown by withQuotaGuard's own fn is not a refusal of the guard's POST: thrown as it is, fn called once", async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    const guard = new QuotaGuard(nova.client(), { ...FAST, baseDelayMs: 100, minDelayMs: 10, maxDelayMs: 1000, jitter: 0 });
    let calls = 0;
    const limited = rateLimit(100);
    const err = await rejection(onFakeTimers(guard.withQuotaGuard({ cores: 1, ramMiB: 512, instances: 1 }, () => {
      calls++;
      return Promise.reject(limited);
    })));
    expect(err).toBe(limited);
    expect(calls).toBe(1);
  });
});
