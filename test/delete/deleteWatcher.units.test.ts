/** Plain units of coalesced waiting: the token bucket (rate cap) and Nova's clock. */
import { describe, expect, it } from 'vitest';
import { CHANGES_SINCE_MARGIN_MS, NovaClock, isoSeconds } from '../../src/delete/novaClock.js';
import { TokenBucket } from '../../src/transport/rateLimiter.js';

describe('TokenBucket', () => {
  it('starts full (burst = one second of requests), refills at the rate, and can go into debt', () => {
    let t = 0;
    const b = new TokenBucket(4, () => t);
    expect(b.burst).toBe(4);
    expect(b.delayFor(4)).toBe(0);
    b.take(4);
    expect(b.tokens).toBe(0);
    expect(b.delayFor(1)).toBe(250);
    t = 125;
    expect(b.tokens).toBe(0.5);
    expect(b.delayFor(1)).toBe(125);
    b.take(3); // pages of a listing spent after the fact
    expect(b.tokens).toBe(-2.5);
    expect(b.delayFor(1)).toBe(875);
    t = 10_000;
    expect(b.tokens).toBe(4); // never above the burst
  });

  it('a rate below 1/s still allows one request at a time; Infinity never waits', () => {
    const t = 0;
    const slow = new TokenBucket(0.5, () => t);
    expect(slow.burst).toBe(1);
    slow.take(1);
    expect(slow.delayFor(1)).toBe(2000);
    const free = new TokenBucket(Number.POSITIVE_INFINITY, () => t);
    free.take(1e9);
    expect(free.delayFor(1e9)).toBe(0);
  });

  it('acquire waits for a token and honours abort', async () => {
    const b = new TokenBucket(50);
    for (let i = 0; i < 50; i++) await b.acquire();
    const t0 = performance.now();
    await b.acquire();
    expect(performance.now() - t0).toBeGreaterThanOrEqual(15);
    const ac = new AbortController();
    b.take(10);
    const p = b.acquire(ac.signal);
    ac.abort();
    await expect(p).rejects.toMatchObject({ name: 'AbortError' });
  });
});

describe('NovaClock', () => {
  it('isoSeconds floors to the second in Nova\'s isotime form', () => {
    expect(isoSeconds(Date.UTC(2026, 10, 30, 14, 3, 9, 999))).toBe('2026-11-30T14:03:09Z');
    expect(isoSeconds(Date.UTC(2026, 0, 1, 0, 0, 0, 0))).toBe('2026-01-01T00:00:00Z');
  });

  it('learns the offset from a Date header (latest sample wins) and maps local times onto Nova\'s clock', () => {
    const c = new NovaClock();
    expect(c.offsetMs).toBeUndefined();
    expect(c.toNova(1000)).toBe(1000);
    c.learn(undefined, 5000);
    expect(c.offsetMs).toBeUndefined();
    c.learn(Date.UTC(2026, 0, 1, 0, 0, 0), Date.UTC(2026, 0, 1, 1, 0, 0, 400)); // Nova 1 h 0.4 s behind
    expect(c.offsetMs).toBe(-3_600_400);
    expect(c.toNova(Date.UTC(2026, 0, 1, 1, 0, 10))).toBe(Date.UTC(2026, 0, 1, 0, 0, 9, 600));
    c.learn(2000, 1000);
    expect(c.offsetMs).toBe(1000);
    expect(CHANGES_SINCE_MARGIN_MS).toBe(2000);
  });
});
