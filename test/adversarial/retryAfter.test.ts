/**
 * 429 with absurd Retry-After values: one beyond the retry budget fails at once (it used to sleep
 * the whole budget, then fail without another attempt); past dates and negatives retry at once.
 */
import { describe, expect, it } from 'vitest';
import { NovaClient, RateLimitError } from '../../src/index.js';
import { reply, scripted } from './scripted.js';

const OVER_LIMIT = { overLimit: { code: 429, message: 'Too many requests' } };

async function firstThen429(retryAfter: string): Promise<{ client: NovaClient; seen: () => number }> {
  let n = 0;
  const s = await scripted((_q, res) => {
    n++;
    if (n === 1) reply(res, 429, OVER_LIMIT, { 'Retry-After': retryAfter });
    else reply(res, 200, { server: { id: 'a', status: 'ACTIVE' } });
  });
  const client = new NovaClient({ endpoint: s.endpoint, token: 'admin:demo', retry: { minDelayMs: 1, maxDelayMs: 5, maxRetryTimeMs: 1000 } });
  return { client, seen: () => n };
}

describe('Retry-After on 429', () => {
  it.each([['3600'], ['1e9'], [new Date(Date.now() + 3_600_000).toUTCString()]])('%s (beyond maxRetryTimeMs): RateLimitError at once, one request', async (ra) => {
    const { client, seen } = await firstThen429(ra);
    const t0 = performance.now();
    const e = await client.getServer('a').catch((x: unknown) => x);
    expect(performance.now() - t0).toBeLessThan(500);
    expect(e).toBeInstanceOf(RateLimitError);
    expect((e as RateLimitError).retryAfterMs).toBeGreaterThan(3_000_000);
    expect(seen()).toBe(1);
  });

  it.each([['0.02'], ['-5'], ['Wed, 21 Oct 2015 07:28:00 GMT'], ['soon']])('%s: retried, and the retry succeeds', async (ra) => {
    const { client, seen } = await firstThen429(ra);
    expect(await client.getServer('a')).toEqual({ id: 'a', status: 'ACTIVE' });
    expect(seen()).toBe(2);
  });
});
