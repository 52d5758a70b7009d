/**
 * The one retry policy and the time limit of an attempt, on fake timers through a scripted axios
 * adapter: which attempt goes out at which ms.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AbortError, NotFoundError, NovaClient, NovaNetworkError, RateLimitError, ServerError } from '../../src/index.js';
import { isRetryable, isTransient } from '../../src/transport/index.js';
import { scriptedAdapter, type ScriptedReply } from './scriptedAdapter.js';

const ENDPOINT = 'http://nova.test/v2.1';
const LIMITS = { limits: { absolute: { maxTotalCores: 20, totalCoresUsed: 0 } } };
const OK: ScriptedReply = { status: 200, body: LIMITS };
const FAULT = (status: number): ScriptedReply => ({ status, body: { computeFault: { code: status, message: 'x' } } });
const RATE_413: ScriptedReply = { status: 413, headers: { 'retry-after': '2' }, body: { overLimit: { code: 413, message: 'This request was rate-limited.', retryAfter: '2' } } };

beforeEach(() => {
  vi.useFakeTimers();
  vi.spyOn(Math, 'random').mockReturnValue(0); // p-retry's randomize factor becomes exactly 1
});
afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

function client(replies: ScriptedReply[], options: Partial<ConstructorParameters<typeof NovaClient>[0]> = {}): { c: NovaClient; sent: ReturnType<typeof scriptedAdapter>['sent'] } {
  const { adapter, sent } = scriptedAdapter((_r, n) => replies[n - 1] ?? OK);
  return { c: new NovaClient({ microversion: '2.1', endpoint: ENDPOINT, token: 'gAAAA-token', adapter, ...options }), sent };
}

/** Settle `p` while running the fake clock. */
async function run<T>(p: Promise<T>): Promise<{ value?: T; error?: unknown; atMs: number }> {
  const t0 = performance.now();
  let done: { value?: T; error?: unknown; atMs: number } | undefined;
  p.then(
    (value) => (done = { value, atMs: performance.now() - t0 }),
    (error: unknown) => (done = { error, atMs: performance.now() - t0 }),
  );
  for (let i = 0; i < 10_000 && !done; i++) await vi.advanceTimersToNextTimerAsync();
  await vi.advanceTimersByTimeAsync(0);
  if (!done) throw new Error('never settled');
  return done;
}

const times = (sent: Array<{ atMs: number }>): number[] => sent.map((s) => Math.round(s.atMs - sent[0]!.atMs));

describe('isTransient: the one definition', () => {
  it('no response, 500/502/503/504 and rate limits; never another 4xx', () => {
    for (const status of [500, 502, 503, 504]) expect(isTransient(new ServerError({ status, message: 'x' })), String(status)).toBe(true);
    expect(isTransient(new ServerError({ status: 501, message: 'x' }))).toBe(false);
    expect(isTransient(new NovaNetworkError({ status: 0, message: 'x', code: 'ECONNRESET' }))).toBe(true);
    expect(isTransient(new RateLimitError({ status: 429, message: 'x' }))).toBe(true);
    expect(isTransient(new RateLimitError({ status: 413, message: 'x', retryAfterMs: 1000 }))).toBe(true);
    expect(isTransient(new NotFoundError({ status: 404, message: 'x' }))).toBe(false);
    expect(isTransient(new AbortError())).toBe(false);
    expect(isRetryable('POST', new ServerError({ status: 503, message: 'x' }))).toBe(false);
    expect(isRetryable('POST', new RateLimitError({ status: 429, message: 'x' }))).toBe(true);
    expect(isRetryable('DELETE', new ServerError({ status: 500, message: 'x' }))).toBe(true);
  });
});

describe('backoff schedule (p-retry: factor 2, minDelayMs, maxDelayMs)', () => {
  it('a GET through 503, 502, 500 and 504 goes out at 0, 250, 750, 1750, 3750 ms', async () => {
    const { c, sent } = client([FAULT(503), FAULT(502), FAULT(500), FAULT(504)]);
    const r = await run(c.getLimits());
    expect(r.error).toBeUndefined();
    expect(times(sent)).toEqual([0, 250, 750, 1750, 3750]);
    expect(c.stats.requests).toBe(5);
  });

  it('maxDelayMs caps the delay; retries bound the attempts; the last error is thrown', async () => {
    const { c, sent } = client(Array(10).fill(FAULT(503)), { retry: { retries: 3, minDelayMs: 100, maxDelayMs: 150 } });
    const r = await run(c.getLimits());
    expect(r.error).toBeInstanceOf(ServerError);
    expect(times(sent)).toEqual([0, 100, 250, 400]);
  });

  it('a POST is not retried on 503, but is on 429', async () => {
    const { c, sent } = client([FAULT(503), { status: 429, body: { error: { message: 'slow down' } } }, { status: 202, body: { server: { id: '00000001-0000-4000-8000-000000000000' } } }]);
    const body = { name: 'x', flavorRef: '1' };
    expect((await run(c.createServer(body))).error).toBeInstanceOf(ServerError);
    const r = await run(c.createServer(body));
    expect(r.value).toMatchObject({ id: '00000001-0000-4000-8000-000000000000' });
    expect(times(sent)).toEqual([0, 0, 250]);
  });
});

describe('rate limits (429, 413 rate limit) with Retry-After', () => {
  it('a 413 rate limit on DELETE is retried like a 429, waiting Retry-After, without using a retry', async () => {
    const { c, sent } = client([RATE_413, RATE_413, RATE_413, { status: 204 }], { retry: { retries: 1 } });
    const r = await run(c.requestDelete('00000001-0000-4000-8000-000000000000'));
    expect(r.value).toBe('delete-requested');
    expect(sent.map((s) => s.method)).toEqual(['DELETE', 'DELETE', 'DELETE', 'DELETE']);
    expect(times(sent)).toEqual([0, 2000, 4000, 6000]);
  });

  it('a 500 on DELETE is retried (transient)', async () => {
    const { c, sent } = client([FAULT(500), { status: 204 }]);
    expect((await run(c.requestDelete('00000001-0000-4000-8000-000000000000'))).value).toBe('delete-requested');
    expect(times(sent)).toEqual([0, 250]);
  });

  it('a Retry-After shorter than minDelayMs is waited for minDelayMs', async () => {
    const { c, sent } = client([{ status: 429, headers: { 'retry-after': '0.1' }, body: {} }, OK], { retry: { minDelayMs: 400 } });
    await run(c.getLimits());
    expect(times(sent)).toEqual([0, 400]);
  });

  it('a 429 without Retry-After uses a retry and p-retry\'s backoff', async () => {
    const { c, sent } = client([{ status: 429, body: {} }, { status: 429, body: {} }], { retry: { retries: 1 } });
    expect((await run(c.getLimits())).error).toBeInstanceOf(RateLimitError);
    expect(times(sent)).toEqual([0, 250]);
  });

  it('a Retry-After beyond what is left of maxRetryTimeMs fails at once', async () => {
    const { c, sent } = client([{ status: 429, headers: { 'retry-after': '5' }, body: {} }, { status: 429, headers: { 'retry-after': '5' }, body: {} }], {
      retry: { maxRetryTimeMs: 8000 },
    });
    const r = await run(c.getLimits());
    expect(r.error).toBeInstanceOf(RateLimitError);
    expect((r.error as RateLimitError).retryAfterMs).toBe(5000);
    expect(times(sent)).toEqual([0, 5000]);
    expect(r.atMs).toBe(5000);
  });

  it('maxRetryTimeMs bounds named pauses that use no retry', async () => {
    const { c, sent } = client(Array(100).fill({ status: 429, headers: { 'retry-after': '1' }, body: {} }), { retry: { retries: 1, maxRetryTimeMs: 4500 } });
    const r = await run(c.getLimits());
    expect(r.error).toBeInstanceOf(RateLimitError);
    // at 4000 ms, 500 ms are left: the next 1000 ms pause fails at once
    expect(times(sent)).toEqual([0, 1000, 2000, 3000, 4000]);
    expect(r.atMs).toBe(4000);
  });
});

describe('time limit of an attempt (requestTimeoutMs) and abort', () => {
  it('a hung GET is cut at requestTimeoutMs, its request released, and retried after the backoff', async () => {
    const { c, sent } = client([{ hang: true }, OK], { requestTimeoutMs: 300 });
    const r = await run(c.getLimits());
    expect(r.error).toBeUndefined();
    expect(times(sent)).toEqual([0, 550]);
    expect(sent[0]!.aborted).toBe(true);
  });

  it('a hung POST times out once (never retried) with a timed-out NovaNetworkError', async () => {
    const { c, sent } = client([{ hang: true }], { requestTimeoutMs: 300 });
    const r = await run(c.createServer({ name: 'x', flavorRef: '1' }));
    expect(r.error).toBeInstanceOf(NovaNetworkError);
    expect((r.error as NovaNetworkError).timedOut).toBe(true);
    expect((r.error as Error).message).toBe(`POST ${ENDPOINT}/servers timed out (no response within 300 ms)`);
    expect(r.atMs).toBe(300);
    expect(sent).toHaveLength(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('abort rejects at once with AbortError, releases the request and stops retrying', async () => {
    const { c, sent } = client([FAULT(503), { hang: true }], { retry: { minDelayMs: 200, maxDelayMs: 200 } });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 300);
    const r = await run(c.getLimits({ signal: ac.signal }));
    expect(r.error).toBeInstanceOf(AbortError);
    expect(r.atMs).toBe(300);
    expect(times(sent)).toEqual([0, 200]);
    expect(sent[1]!.aborted).toBe(true);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(sent).toHaveLength(2);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('the one definition of transient, in a delete-wait', () => {
  it('a GET 500 while waiting for a delete is retried, and the wait ends deleted at the 404', async () => {
    const { waitForDelete } = await import('../../src/index.js');
    const deleting: ScriptedReply = { status: 200, body: { server: { id: '00000001-0000-4000-8000-000000000000', status: 'ACTIVE', 'OS-EXT-STS:task_state': 'deleting' } } };
    const gone: ScriptedReply = { status: 404, body: { itemNotFound: { code: 404, message: 'Instance 00000001-0000-4000-8000-000000000000 could not be found.' } } };
    // The delete-wait's pauses are not on the injectable clock yet (the delete engine's part): real
    // timers here, with short intervals and an outcome, not a schedule.
    vi.useRealTimers();
    const { c, sent } = client([deleting, FAULT(500), gone], { coalesce: false });
    const r = await waitForDelete(c, '00000001-0000-4000-8000-000000000000', { intervalMs: 5, jitter: 0, timeoutMs: 20_000 });
    expect(r).toMatchObject({ outcome: 'deleted' });
    expect(sent.map((s) => s.method)).toEqual(['GET', 'GET', 'GET']);
  });
});
