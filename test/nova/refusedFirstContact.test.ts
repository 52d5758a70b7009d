/**
 * `NovaClientOptions.refusedFirstContactMs`: before Nova has answered a client once, a request
 * refused on every attempt (`ECONNREFUSED`: nothing listens) stops retrying within that time; once
 * Nova has answered, or when an attempt failed otherwise, the retry policy alone applies.
 * Real sockets (a closed port, a FakeNova that is stopped) on the real clock.
 */
import { describe, expect, it } from 'vitest';
import { NovaClient, NovaNetworkError, ValidationError } from '../../src/index.js';
import { startNova } from '../helpers.js';
import { closedPort } from '../helpers.js';

/** `getLimits` on `client`: the error and the number of attempts. */
async function limitsAttempts(client: NovaClient): Promise<{ error: unknown; attempts: number; ms: number }> {
  let attempts = 0;
  const started = performance.now();
  const error = await client.getLimits({ onAttempt: () => void attempts++ }).then(
    () => undefined,
    (e: unknown) => e,
  );
  return { error, attempts, ms: performance.now() - started };
}

const FAST_RETRY = { minDelayMs: 5, maxDelayMs: 10 };

describe('refusedFirstContactMs', () => {
  it('default (Infinity): a refused endpoint gets the whole retry policy (5 attempts)', async () => {
    const client = new NovaClient({ endpoint: `http://127.0.0.1:${await closedPort()}/v2.1`, token: 't', retry: FAST_RETRY });
    const r = await limitsAttempts(client);
    expect(r.error).toBeInstanceOf(NovaNetworkError);
    expect((r.error as NovaNetworkError).code).toBe('ECONNREFUSED');
    expect(r.attempts).toBe(5);
  });

  it('1000 with the default retry policy: a refused endpoint fails within about a second (3 attempts at most), not 5-7 s', async () => {
    const client = new NovaClient({ endpoint: `http://127.0.0.1:${await closedPort()}/v2.1`, token: 't', refusedFirstContactMs: 1000 });
    const r = await limitsAttempts(client);
    expect((r.error as NovaNetworkError).code).toBe('ECONNREFUSED');
    expect(r.attempts).toBeGreaterThanOrEqual(2);
    expect(r.attempts).toBeLessThanOrEqual(3);
    // The backoffs before attempts 2 and 3 are 250-500 ms and 500-1000 ms; with the old policy a 4th
    // and 5th would add at least 3 s more. Generous for a loaded machine.
    expect(r.ms).toBeLessThan(2_500);
  });

  it('0: one attempt while Nova never answered', async () => {
    const client = new NovaClient({ endpoint: `http://127.0.0.1:${await closedPort()}/v2.1`, token: 't', refusedFirstContactMs: 0, retry: FAST_RETRY });
    expect((await limitsAttempts(client)).attempts).toBe(1);
  });

  it('once Nova has answered, a refused connection (Nova restarting) gets the whole retry policy again', async () => {
    const nova = await startNova();
    const client = new NovaClient({ endpoint: nova.endpoint, token: `admin:${nova.projectId}`, refusedFirstContactMs: 0, retry: FAST_RETRY });
    await client.getLimits();
    await nova.close();
    const r = await limitsAttempts(client);
    expect((r.error as NovaNetworkError).code).toBe('ECONNREFUSED');
    expect(r.attempts).toBe(5);
  });

  it('an attempt that failed otherwise (a 503 from a proxy) keeps the retry policy for that request', async () => {
    const nova = await startNova();
    // Every answer is a 503 (Nova "answered": the client has had a response), so this is the plain policy.
    nova.inject({ method: 'GET', path: '/limits', status: 503, times: Infinity });
    const client = new NovaClient({ endpoint: nova.endpoint, token: `admin:${nova.projectId}`, refusedFirstContactMs: 0, retry: FAST_RETRY });
    const r = await limitsAttempts(client);
    expect(r.attempts).toBe(5);
    await nova.close();
  });

  it('is checked with the other options: a negative or non-number value is a ValidationError', () => {
    for (const bad of [-1, Number.NaN, '1s', null]) {
      expect(() => new NovaClient({ endpoint: 'http://127.0.0.1:1/v2.1', token: 't', refusedFirstContactMs: bad as number })).toThrow(ValidationError);
    }
    expect(() => new NovaClient({ endpoint: 'http://127.0.0.1:1/v2.1', token: 't', refusedFirstContactMs: Number.POSITIVE_INFINITY })).not.toThrow();
  });
});
