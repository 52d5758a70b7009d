// The shortfall checks of a client's waiting calls share one project listing (src/guard/explain.ts):
// found by the fleet simulation, where every waiting call listed the whole project every 5th wait.
// On fake timers through FakeNova's in-process adapter.
import { describe, expect, it } from 'vitest';
import { QuotaGuard, QuotaWaitTimeoutError, type QuotaWaitInfo } from '../../src/guard/index.js';
import { EXPLAIN_MIN_INTERVAL_MS } from '../../src/guard/explain.js';
import { rejection, settle, useFakeClock } from '../helpers.js';
import { FAST, body, clientFor, startNova } from './fixtures.js';

useFakeClock();

describe('shortfall checks share one listing per client', () => {
  it('8 calls waiting on one client, each to its 10th wait and a time-out: 1 listing for the checks on waits within the interval, and the time-outs share what is in flight', async () => {
    const nova = await startNova({ maxTotalCores: 4 });
    nova.addServer({ flavorId: '2' });
    nova.addServer({ flavorId: '2' });
    const client = clientFor(nova);
    const infos: QuotaWaitInfo[] = [];
    // Two guards on one client: the listing is the client's.
    const options = { ...FAST, minDelayMs: 1000, baseDelayMs: 1000, maxDelayMs: 1000, jitter: 0, maxWaitMs: 10_500, onWait: (i: QuotaWaitInfo) => void infos.push(i) };
    const guards = [new QuotaGuard(client, options), new QuotaGuard(client, options)];
    const calls = Array.from({ length: 8 }, (_, i) => rejection(settle(guards[i % 2]!.createServer(body(`w${i}`)))));
    const errors = await Promise.all(calls);
    expect(errors.every((e) => e instanceof QuotaWaitTimeoutError)).toBe(true);
    // Every time-out has its check, on a listing sent after its reading.
    expect(errors.map((e) => (e as QuotaWaitTimeoutError).shortfallCause)).toEqual(Array(8).fill('busy-fleet'));
    // 8 calls x 2 checks on waits (5th and 10th) within 10.5 s: one listing for those (not 16),
    // shared by the 5th waits (they read before it was sent), none for the 10th (within the
    // interval); the 8 time-outs within the same ms: at most 2 (the one in flight, then one shared).
    const listings = nova.requestsTo('GET', '/servers/detail');
    expect(infos.filter((i) => i.waits % 5 === 0)).toHaveLength(16);
    expect(infos.filter((i) => i.shortfallCause !== undefined).map((i) => i.waits)).toEqual(Array(8).fill(5));
    expect(listings.length).toBeGreaterThanOrEqual(2);
    expect(listings.length).toBeLessThanOrEqual(3);
    await Promise.all(guards.map((g) => g.close()));
  });

  it('a check on a wait lists again once the interval has passed; another client lists on its own', async () => {
    const nova = await startNova({ maxTotalCores: 4 });
    nova.addServer({ flavorId: '2' });
    nova.addServer({ flavorId: '2' });
    const [c1, c2] = [clientFor(nova), clientFor(nova)];
    const causes: Array<string | undefined> = [];
    const options = { ...FAST, minDelayMs: 1000, baseDelayMs: 1000, maxDelayMs: 1000, jitter: 0, maxWaitMs: EXPLAIN_MIN_INTERVAL_MS + 10_500, explainShortfall: true, onWait: (i: QuotaWaitInfo) => void (i.waits % 5 === 0 && causes.push(i.shortfallCause)) };
    const e1 = rejection(settle(new QuotaGuard(c1, options).createServer(body('a'))));
    const e2 = rejection(settle(new QuotaGuard(c2, options).createServer(body('b'))));
    await Promise.all([e1, e2]);
    const at = nova.requestsTo('GET', '/servers/detail').map((r) => r.timeMs);
    // Per client: the 5th wait (~5 s) lists, the next check that may list is the first 60 s later
    // (the 65th wait), then the time-out at ~70.5 s has its own: 3 per client.
    expect(at).toHaveLength(6);
    expect(causes.filter((c) => c !== undefined)).toHaveLength(4);
  });
});
