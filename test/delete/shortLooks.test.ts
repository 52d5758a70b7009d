/**
 * Short looks while a create waits (src/delete/shortLooks.ts, issue 20 item 4), on fake timers
 * against FakeNova: while a create of a guard on the client waits for headroom, the client's
 * delete waits look at the deleting server every `shortLookIntervalMs` (1 s) instead of their own
 * interval; with nobody waiting, at their own interval; on a slow Nova, never more looks than without.
 */
import { describe, expect, it } from 'vitest';
import { QuotaGuard, QUOTA_GUARD_DEFAULTS } from '../../src/guard/index.js';
import { AbortError, ValidationError } from '../../src/errors/index.js';
import type { FakeNova } from '../../src/testing/index.js';
import { clientFor, runUntil, settle, startNova, T0, useFakeClock } from '../helpers.js';
import { FAST, body } from '../guard/fixtures.js';

useFakeClock();

const SERVER = /^\/servers\/[0-9a-f-]{36}$/;
const WAITING = { ...FAST, minDelayMs: 600_000, baseDelayMs: 600_000, maxDelayMs: 600_000, jitter: 0, maxWaitMs: 3_600_000 };

/** Arrival times (ms since T0) of the GETs of `id`, and their status. */
const getsOf = (nova: FakeNova, id: string): Array<{ at: number; status: number }> =>
  nova.requests.filter((q) => q.method === 'GET' && q.path === `/servers/${id}`).map((q) => ({ at: q.timeMs - T0, status: q.status }));
const gaps = (times: number[]): number[] => times.slice(1).map((t, i) => t - times[i]!);

describe('short looks at deletions while a create waits for headroom', () => {
  it('looks every 1 s while a create waits, at the caller interval (5 s) once nobody waits', async () => {
    const nova = await startNova({ maxTotalCores: 2, deleteDelayMs: 3500, deletedWindowMs: 0 });
    const client = clientFor(nova);
    const guard = new QuotaGuard(client, WAITING);
    expect(QUOTA_GUARD_DEFAULTS.shortLookIntervalMs).toBe(1000);
    const holder = nova.addServer({ status: 'ACTIVE', flavorId: '2' }).id;
    const created = guard.createServer(body('waiting'));
    await runUntil(() => guard.stats.waits === 1);
    await settle(client.deleteServer(holder, { wait: true, intervalMs: 5000, jitter: 0 }));
    const held = getsOf(nova, holder);
    // First look a second after the DELETE (a look at once could not see the 404), then every second
    // until the 404 (3.5 s after the DELETE): not at 5 s.
    const deleted = nova.requestsTo('DELETE', `/servers/${holder}`)[0]!.timeMs - T0;
    expect(held.map((g) => g.at - deleted)).toEqual([1000, 2000, 3000, 4000]);
    expect(held.map((g) => g.status)).toEqual([200, 200, 200, 404]);
    const s = await settle(created);
    // Nobody waits now: the caller's interval.
    const from = nova.requests.length;
    await settle(client.deleteServer(s.id, { wait: true, intervalMs: 5000, jitter: 0 }));
    // The looks after its DELETE (the GET before it is the guard's ACTIVE wait).
    const own = nova.requests
      .slice(from)
      .filter((q) => q.method === 'GET' && q.path === `/servers/${s.id}`)
      .map((q) => ({ at: q.timeMs - T0, status: q.status }));
    // Nothing learned yet (one delete seen): the first look a confirm interval (1 s) after the DELETE,
    // the next on the grid of the caller's 5 s from it.
    expect(gaps(own.map((g) => g.at)).slice(-1)).toEqual([4000]);
    expect(own.map((g) => g.status).slice(-2)).toEqual([200, 404]);
    await guard.close();
  });

  it('a create that starts waiting pulls the next look of a pending delete wait in', async () => {
    const nova = await startNova({ maxTotalCores: 2, deleteDelayMs: 9000, deletedWindowMs: 0 });
    const client = clientFor(nova);
    const guard = new QuotaGuard(client, WAITING);
    const [a, b] = [nova.addServer({ status: 'ACTIVE', flavorId: '2' }).id, nova.addServer({ status: 'ACTIVE', flavorId: '1' }).id];
    // b's delete wait is pending, at 20 s between looks, before anyone waits.
    const deleting = client.deleteServer(b, { wait: true, intervalMs: 20_000, jitter: 0 });
    await runUntil(() => getsOf(nova, b).length === 1);
    const t0 = getsOf(nova, b)[0]!.at;
    nova.destroyServer(a);
    nova.addServer({ status: 'ACTIVE', flavorId: '2' });
    await settle(new Promise((r) => setTimeout(r, 2000)));
    const stop = new AbortController();
    const created = guard.createServer(body('waiting'), { signal: stop.signal });
    await runUntil(() => guard.stats.waits === 1);
    const waitAt = Date.now() - T0;
    await settle(deleting);
    const looks = getsOf(nova, b).map((g) => g.at - t0);
    // 0, then 1 s after the create began to wait, then every second to the 404 at 9 s.
    expect(looks[1]).toBe(waitAt - t0 + 1000);
    expect(gaps(looks.slice(1)).every((g) => g === 1000)).toBe(true);
    expect(looks.at(-1)).toBeLessThan(10_000);
    // Still waiting (no headroom yet): ended here, not left waiting on the fake clock after the test.
    stop.abort();
    await expect(settle(created)).rejects.toBeInstanceOf(AbortError);
    await guard.close();
  });

  it('a slow Nova (every GET 600 ms, over half the short interval) gets no more looks than without short looks', async () => {
    const run = async (shortLookIntervalMs: number): Promise<number> => {
      const nova = await startNova({ maxTotalCores: 2, deleteDelayMs: 30_000, deletedWindowMs: 0 });
      nova.inject({ method: 'GET', path: SERVER, delayMs: 600, times: Number.POSITIVE_INFINITY });
      const client = clientFor(nova, { requestTimeoutMs: 30_000 });
      const guard = new QuotaGuard(client, { ...WAITING, shortLookIntervalMs });
      const holder = nova.addServer({ status: 'ACTIVE', flavorId: '2' }).id;
      const created = guard.createServer(body('waiting'));
      await runUntil(() => guard.stats.waits === 1);
      await settle(client.deleteServer(holder, { wait: true, intervalMs: 5000, jitter: 0, timeoutMs: 120_000 }));
      await settle(created);
      await guard.close();
      return getsOf(nova, holder).length;
    };
    const without = await run(Number.POSITIVE_INFINITY);
    const withShort = await run(1000);
    // Without: a look every 5 s (+0.6 s) for 30 s; with: the first short look's slow answer widens
    // the pace, and short looks stop while it is widened.
    expect(without).toBeGreaterThanOrEqual(5);
    expect(withShort).toBeLessThanOrEqual(without);
  });

  it('shortLookIntervalMs is refused when not a duration (a misspelt name too), before any request', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    expect(() => new QuotaGuard(client, { shortLookIntervalMs: -1 })).toThrow(ValidationError);
    expect(() => new QuotaGuard(client, { shortLookIntervalMs: 2 ** 31 })).toThrow(ValidationError);
    expect(() => new QuotaGuard(client, { shortLookInterval: 1000 } as never)).toThrow(ValidationError);
    expect(nova.requests).toEqual([]);
  });
});
