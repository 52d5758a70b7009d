/**
 * A server a shared listing showed, then gone, while Nova's listings fail (the case behind the
 * counterexample of the engine property "shared polling never fails a wait that per-server polling
 * ends deleted", seed 1231557694, where listings failed 2 times in 3): its 404 contradicts the latest listing, so only a brief listing
 * without it confirms it (an orphaned mapping answers 404 and stays listed: `needsCheck` in
 * evidence.ts). Per-server polling never lists, so it has nothing to check and ends `deleted`;
 * shared polling, whose every listing after the 404 failed, ends `timeout` (unknown) and never
 * `deleted` on the unchecked 404; given one more look, the listing that answers confirms it.
 * ScriptedNova on fake timers, jitter 0.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { NovaClient, waitForDelete } from '../../src/index.js';
import { ScriptedNova, type Fault, type Timeline } from './support/scriptedNova.js';

const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);
const IDS = [0, 1, 2].map((k) => `0000000${k}-0000-4000-8000-000000000000`);
const TIMELINES: Timeline[] = [{ deletedAfterMs: 1871, goneAfterMs: 4034 }, { goneAfterMs: 5 }, { deletedAfterMs: 2477, goneAfterMs: 7897 }];
/** The listings (changes-since or brief) that fail, in turn: a 500, a proxy's 404 page. */
const LISTING_FAULTS: Fault[] = [{ kind: 'status', status: 500 }, { kind: 'proxy404' }];

afterEach(() => {
  vi.useRealTimers();
});

/**
 * Delete the three servers (requestDelete, then waitForDelete); server 2 answers 404 from 7897 ms on,
 * and every listing fails from then until `listingsBackAtMs` (ms after T0).
 */
async function play(coalesce: boolean, timeoutMs: number, listingsBackAtMs = Number.POSITIVE_INFINITY): Promise<{ nova: ScriptedNova; ends: Map<string, { outcome: string; at: number }> }> {
  vi.useFakeTimers({ now: T0 });
  const nova = new ScriptedNova();
  nova.skewMs = -300_000; // Nova's clock 5 min behind
  let i = 0;
  nova.fault = ({ method, listing }) => {
    const at = Date.now() - T0;
    return method === 'GET' && listing && at >= TIMELINES[2]!.goneAfterMs! && at < listingsBackAtMs ? LISTING_FAULTS[i++ % LISTING_FAULTS.length] : undefined;
  };
  const client = new NovaClient({
    endpoint: 'http://nova.test/v2.1',
    token: 'admin:p',
    adapter: nova.adapter,
    coalesce,
    requestTimeoutMs: 1000,
    maxRequestsPerSecond: Number.POSITIVE_INFINITY,
    retry: { retries: 2, minDelayMs: 50, maxDelayMs: 200, maxRetryTimeMs: 1000 },
  });
  const ends = new Map<string, { outcome: string; at: number }>();
  IDS.forEach((id, k) => nova.add(id, TIMELINES[k]!));
  for (const id of IDS) {
    void client.requestDelete(id).then(() => waitForDelete(client, id, { intervalMs: 1000, timeoutMs, jitter: 0 }).then((r) => void ends.set(id, { outcome: r.outcome, at: Date.now() - T0 })));
  }
  for (let t = 0; t < timeoutMs + 5000 && ends.size < IDS.length; t += 10) await vi.advanceTimersByTimeAsync(10);
  return { nova, ends };
}

describe('a server listed, then gone, while listings fail', () => {
  it('per-server polling: deleted at its first 404 (nothing listed it, nothing to check)', async () => {
    const { nova, ends } = await play(false, 14_336);
    expect(nova.seen.some((q) => q.path === '/servers' || q.path === '/servers/detail')).toBe(false);
    expect(ends.get(IDS[2]!)?.outcome).toBe('deleted');
  });

  it('shared polling: timeout, never deleted on an unchecked 404; every 404 was checked and every check failed', async () => {
    const { nova, ends } = await play(true, 14_336);
    expect(ends.get(IDS[0]!)?.outcome).toBe('deleted');
    expect(ends.get(IDS[1]!)?.outcome).toBe('deleted');
    expect(ends.get(IDS[2]!)).toEqual({ outcome: 'timeout', at: 14_336 });
    const goneAt = nova.goneAt(IDS[2]!)!;
    const after = nova.seen.filter((q) => q.at >= goneAt);
    // Its GETs after it was gone answered Nova's 404; each was followed by a brief listing (the check), which failed.
    const looks = after.filter((q) => q.serverId === IDS[2]);
    expect(looks.length).toBeGreaterThanOrEqual(1);
    for (const q of looks) expect(q.status).toBe(404);
    // Checked again at every interval or wider (the pace widened by the failures), not more often.
    for (let k = 1; k < looks.length; k++) expect(looks[k]!.at - looks[k - 1]!.at).toBeGreaterThanOrEqual(1000);
    const listings = after.filter((q) => q.path === '/servers');
    expect(listings).toHaveLength(looks.length);
    for (const q of listings) expect([0, 404, 500]).toContain(q.status);
    // An earlier listing showed it (so the 404 needed its check): the latest that answered, before it was gone.
    const answered = nova.seen.filter((q) => q.path === '/servers' && q.status === 200 && q.at < goneAt);
    expect(answered.length).toBeGreaterThan(0);
  });

  it('shared polling, the listings back before the deadline: the listing that answers confirms the 404, deleted', async () => {
    const { nova, ends } = await play(true, 14_336, 11_000);
    const end = ends.get(IDS[2]!);
    expect(end?.outcome).toBe('deleted');
    const confirmedBy = nova.seen.filter((q) => q.path === '/servers' && q.status === 200 && q.at - T0 <= end!.at);
    expect(confirmedBy.at(-1)!.at - T0).toBe(end!.at);
  });
});
