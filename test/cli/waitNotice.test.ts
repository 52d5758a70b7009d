// The "waiting for nova" notice on fake timers: one line per attempt of a request that is retried.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { withWaitNotice } from '../../src/cli/waitNotice.js';
import { REFUSED_FIRST_CONTACT_MS } from '../../src/cli/common.js';
import { NovaApiError, NovaNetworkError } from '../../src/errors/index.js';
import { NovaClient } from '../../src/nova/client.js';
import { clientFor, fakeMs, settle, startNova, useFakeClock } from '../helpers.js';

useFakeClock();

describe('withWaitNotice', () => {
  let restore: (() => void) | undefined;
  afterEach(() => restore?.());

  function captureStderr(): Array<[number, string]> {
    const lines: Array<[number, string]> = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void lines.push([fakeMs(), a.join(' ')]));
    restore = () => spy.mockRestore();
    return lines;
  }

  it('a request failing on every attempt: one line per attempt (1 to 5), none repeated', async () => {
    const nova = await startNova();
    nova.inject({ method: 'GET', path: '/limits', reset: true, times: Number.POSITIVE_INFINITY });
    // Pauses between attempts longer than the notice's quiet second (1.5 s, doubling), as the
    // default policy's later ones are: the quiet-time timer fires during each pause.
    const client = clientFor(nova, { retry: { minDelayMs: 1500, maxDelayMs: 60_000, maxRetryTimeMs: 600_000 } });
    const lines = captureStderr();
    const failure = await settle(withWaitNotice(client, (hooks) => client.getLimits(hooks)).catch((e: unknown) => e));
    expect(failure).toBeInstanceOf(NovaApiError);
    const attempts = lines.map(([, l]) => /\(attempt (\d) of 5\)$/.exec(l)?.[1]);
    // Attempt 1 is still unanswered (pausing before its retry) after the quiet second; then each
    // retry says its number once (the quiet-time timer used to repeat it during the next pause).
    expect(attempts).toEqual(['1', '2', '3', '4', '5']);
    expect(lines[0]![0]).toBe(1000);
    expect(lines.every(([, l]) => l.startsWith(`waiting for nova at ${nova.endpoint} ... (attempt `))).toBe(true);
    expect(nova.requestsTo('GET', '/limits')).toHaveLength(5);
  });

  it('a request unanswered for a second: the line of attempt 1, once', async () => {
    const nova = await startNova();
    nova.inject({ method: 'GET', path: '/limits', delayMs: 5000 });
    const client = clientFor(nova);
    const lines = captureStderr();
    await settle(withWaitNotice(client, (hooks) => client.getLimits(hooks)));
    expect(lines).toEqual([[1000, `waiting for nova at ${nova.endpoint} ... (attempt 1 of 5)`]]);
  });

  it("a Nova that refuses every connection from the first (the CLI's refusedFirstContactMs): the lines count the attempts really made and promise no total", async () => {
    const nova = await startNova();
    await nova.close(); // its adapter now refuses every request (ECONNREFUSED), as a closed port
    let sent = 0;
    const adapter: typeof nova.adapter = (config) => {
      sent++;
      return nova.adapter(config);
    };
    // The CLI's client: the default retry policy (5 attempts), cut short by refusedFirstContactMs.
    const client = new NovaClient({ endpoint: nova.endpoint, token: 'admin:demo', microversion: '2.79', adapter, refusedFirstContactMs: REFUSED_FIRST_CONTACT_MS });
    const lines = captureStderr();
    const failure = await settle(withWaitNotice(client, (hooks) => client.getLimits(hooks)).catch((e: unknown) => e));
    expect(failure).toBeInstanceOf(NovaNetworkError);
    expect(sent).toBeGreaterThan(1);
    expect(sent).toBeLessThan(5);
    // one line per retry (attempt 2 to the last one sent), none saying "of 5" (it stopped at 3 of 5)
    expect(lines.map(([, l]) => l)).toEqual(Array.from({ length: sent - 1 }, (_, i) => `waiting for nova at ${nova.endpoint} ... (attempt ${i + 2}, connection refused)`));
  });
});
