/**
 * The backoff delays of the guard (waits and retries) and a quota 403's Retry-After: plain
 * functions, exact values (moved from the headroom tests, which are the ledger's: test/ledger/).
 */
import { describe, expect, it } from 'vitest';
import { backoffDelayMs, firstDelayMs, retrySchedule } from '../../src/guard/retryPolicy.js';
import { planRetry } from '../../src/guard/retryPolicy.js';
import { QuotaExceededError } from '../../src/errors/index.js';

describe('backoffDelayMs', () => {
  const policy = { baseDelayMs: 2000, minDelayMs: 1000, maxDelayMs: 60000, jitter: 0.2 };
  it('doubles per step, ±jitter, rounded', () => {
    expect(backoffDelayMs(0, policy, 0.5)).toBe(2000);
    expect(backoffDelayMs(1, policy, 0.5)).toBe(4000);
    expect(backoffDelayMs(0, policy, 0)).toBe(1600);
    expect(backoffDelayMs(1, policy, 0.999999)).toBe(4800);
  });
  it('clamped to [minDelayMs, maxDelayMs]', () => {
    expect(backoffDelayMs(10, policy, 0.5)).toBe(60000);
    expect(backoffDelayMs(0, { ...policy, baseDelayMs: 0 }, 0.5)).toBe(1000);
    expect(backoffDelayMs(2000, policy, 0.5)).toBe(60000);
  });
  it("a quota 403's Retry-After is a floor of the retry's delay, but not above maxDelayMs", () => {
    const limits = { maxAttempts: 8, maxDelayMs: 60000, firstDelayMs: firstDelayMs({ ...policy, jitter: 0 }) };
    const quota = (retryAfterMs?: number): QuotaExceededError =>
      new QuotaExceededError({ status: 403, message: 'Quota exceeded for cores: Requested 2, but already used 514 of 515 cores', ...(retryAfterMs === undefined ? {} : { retryAfterMs }) });
    const plan = (retriesConsumed: number, error: QuotaExceededError): number =>
      planRetry({ error, refusal: undefined, retriesConsumed, freeRetries: 0, remainingMs: 600000, aborted: false }, limits).delayMs;
    expect(plan(0, quota())).toBe(2000);
    expect(plan(1, quota(10000))).toBe(10000);
    expect(plan(2, quota(120000))).toBe(60000);
    // p-retry waits its backoff; the guard waits only the part of Retry-After beyond it.
    expect(planRetry({ error: quota(10000), refusal: undefined, retriesConsumed: 1, freeRetries: 0, remainingMs: 600000, aborted: false }, limits)).toMatchObject({
      retry: true,
      consume: true,
      delayMs: 10000,
      ownWaitMs: 6000,
    });
  });
  it('with jitter 0.2 every draw stays within ±20 % of 2 s, then 4 s', () => {
    for (let i = 0; i < 200; i++) {
      const random = Math.random();
      const d0 = backoffDelayMs(0, policy, random);
      const d1 = backoffDelayMs(1, policy, random);
      expect(d0).toBeGreaterThanOrEqual(1600);
      expect(d0).toBeLessThanOrEqual(2400);
      expect(d1).toBeGreaterThanOrEqual(3200);
      expect(d1).toBeLessThanOrEqual(4800);
      expect(d1).toBeGreaterThan(d0);
      // Independent draws stay in the same ranges.
      expect(backoffDelayMs(0, policy)).toBeGreaterThanOrEqual(1600);
      expect(backoffDelayMs(0, policy)).toBeLessThanOrEqual(2400);
    }
  });
  it('is the delay p-retry waits with the options of retrySchedule', () => {
    const s = retrySchedule(firstDelayMs(policy, 0.25), policy.maxDelayMs);
    expect(s).toEqual({ factor: 2, minTimeout: 1800, maxTimeout: 60000, randomize: false });
    // p-retry: round(minTimeout × factor^n), at most maxTimeout.
    for (let n = 0; n < 8; n++) expect(backoffDelayMs(n, policy, 0.25)).toBe(Math.min(s.maxTimeout, Math.round(s.minTimeout * s.factor ** n)));
  });
});
