/**
 * 429 with absurd Retry-After values: one beyond the retry budget fails at once (it used to sleep
 * the whole budget, then fail without another attempt); past dates and negatives retry at once.
 * On fake timers, through a scripted axios adapter.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { NovaClient, RateLimitError } from '../../src/index.js';
import { scriptedAdapter } from '../transport/scriptedAdapter.js';

const OVER_LIMIT = { overLimit: { code: 429, message: 'Too many requests' } };

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

function firstThen429(retryAfter: string): { client: NovaClient; seen: () => number } {
  const { adapter, sent } = scriptedAdapter((_r, n) =>
    n === 1 ? { status: 429, body: OVER_LIMIT, headers: { 'Retry-After': retryAfter } } : { status: 200, body: { server: { id: 'aaaaaaaa-0000-4000-8000-00000000000a', status: 'ACTIVE' } } },
  );
  const client = new NovaClient({ microversion: '2.1', endpoint: 'http://nova.test/v2.1', token: 'admin:demo', adapter, retry: { minDelayMs: 1, maxDelayMs: 5, maxRetryTimeMs: 1000 } });
  return { client, seen: () => sent.length };
}

/** Settle `p`, running the fake clock timer by timer. */
async function onFakeClock<T>(p: Promise<T>): Promise<T> {
  let settled = false;
  p.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let i = 0; i < 1000 && !settled; i++) await vi.advanceTimersToNextTimerAsync();
  return p;
}

describe('Retry-After on 429', () => {
  it.each([['3600'], ['1e9'], [new Date(Date.now() + 3_600_000).toUTCString()]])('%s (beyond maxRetryTimeMs): RateLimitError at once, one request', async (ra) => {
    const { client, seen } = firstThen429(ra);
    const t0 = performance.now();
    const e = await onFakeClock(client.getServer('aaaaaaaa-0000-4000-8000-00000000000a')).catch((x: unknown) => x);
    expect(performance.now() - t0).toBeLessThan(500);
    expect(performance.now() - t0).toBe(0); // at once: no timer ran
    expect(e).toBeInstanceOf(RateLimitError);
    expect((e as RateLimitError).retryAfterMs).toBeGreaterThan(3_000_000);
    expect(seen()).toBe(1);
  });

  it.each([['0.02'], ['-5'], ['Wed, 21 Oct 2015 07:28:00 GMT'], ['soon']])('%s: retried, and the retry succeeds', async (ra) => {
    const { client, seen } = firstThen429(ra);
    expect(await onFakeClock(client.getServer('aaaaaaaa-0000-4000-8000-00000000000a'))).toEqual({ id: 'aaaaaaaa-0000-4000-8000-00000000000a', status: 'ACTIVE' });
    expect(seen()).toBe(2);
  });
});
