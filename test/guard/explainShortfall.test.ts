/**
 * The guard uses the evidence: when a wait for headroom runs out, one listing of the project's servers
 * compared with /limits tells "the fleet is busy" from "Nova's books are wrong" (FakeNova causes).
 * On fake timers through FakeNova's in-process adapter.
 */
import { describe, expect, it } from 'vitest';
import { QuotaWaitTimeoutError, type QuotaWaitInfo } from '../../src/guard/index.js';
import type { FakeNova } from '../../src/testing/index.js';
import { rejection, settle, useFakeClock } from '../helpers.js';
import { body, guardFor, startNova } from './fixtures.js';

useFakeClock();

const WAIT = { maxWaitMs: 1000 } as const;
const listings = (nova: FakeNova): number => nova.requestsTo('GET', '/servers/detail').length;

async function timeout(nova: FakeNova, options = {}): Promise<QuotaWaitTimeoutError> {
  const e = await rejection(settle(guardFor(nova, { ...WAIT, ...options }).createServer(body('x', '3'))));
  expect(e).toBeInstanceOf(QuotaWaitTimeoutError);
  return e as QuotaWaitTimeoutError;
}

describe('QuotaWaitTimeoutError says why the create did not fit', () => {
  it('stale usage (Nova counts cores no server holds): wrong-books, finding stale-usage with the unexplained cores', async () => {
    const nova = await startNova({ maxTotalCores: 8 });
    nova.addServer({ flavorId: '2' });
    nova.causes.staleUsage({ cores: 4 });
    const e = await timeout(nova);
    expect(e.shortfallCause).toBe('wrong-books');
    expect(e.finding).toMatchObject({ kind: 'stale-usage', transient: false, serverIds: [], holds: { cores: 4, ramMiB: 0, instances: 0 } });
    expect(e.finding!.operatorCan).toContain('nova-manage');
    expect(e.message).toContain("Nova's books are wrong (stale-usage)");
    // One listing at the timeout, and one on each 5th wait before it.
    expect(listings(nova)).toBeGreaterThanOrEqual(1);
  });

  it('a delete that never finishes (DELETED, still counted since before the wait): wrong-books, finding stuck-deleting naming it', async () => {
    const nova = await startNova({ maxTotalCores: 7 });
    nova.addServer({ flavorId: '2' });
    const stuck = nova.addServer({ flavorId: '2' }).id;
    nova.causes.stickDeleting(stuck);
    await settle(new Promise((r) => setTimeout(r, 1000)));
    const e = await timeout(nova);
    expect(e.shortfallCause).toBe('wrong-books');
    expect(e.finding).toMatchObject({ kind: 'stuck-deleting', serverIds: [stuck], holds: { cores: 2, ramMiB: 2048, instances: 1 } });
  });

  it('a busy fleet (live servers hold the quota): busy-fleet, no finding', async () => {
    const nova = await startNova({ maxTotalCores: 7 });
    nova.addServer({ flavorId: '2' });
    nova.addServer({ flavorId: '2' });
    const e = await timeout(nova);
    expect(e.shortfallCause).toBe('busy-fleet');
    expect(e.finding).toBeUndefined();
    expect(e.message).toContain("the project's servers hold this quota (a busy fleet)");
  });

  it('explainShortfall: false sends no listing and leaves both undefined', async () => {
    const nova = await startNova({ maxTotalCores: 8 });
    nova.addServer({ flavorId: '2' });
    nova.causes.staleUsage({ cores: 4 });
    const e = await timeout(nova, { explainShortfall: false });
    expect(e.shortfallCause).toBeUndefined();
    expect(e.finding).toBeUndefined();
    expect(listings(nova)).toBe(0);
  });

  it('a failed check leaves the cause unknown, the error as before', async () => {
    const nova = await startNova({ maxTotalCores: 8 });
    nova.addServer({ flavorId: '2' });
    nova.causes.staleUsage({ cores: 4 });
    nova.inject({ method: 'GET', path: '/servers/detail', status: 403, times: Infinity });
    const e = await timeout(nova);
    expect(e.shortfallCause).toBeUndefined();
    expect(e.finding).toBeUndefined();
    expect(e.message).toContain('No quota headroom after waiting');
  });
});

describe('onWait carries the finding every 5th wait', () => {
  it('wait 5 carries stale-usage; the other waits within EXPLAIN_MIN_INTERVAL_MS carry nothing (the client lists at most once per interval for them); the time-out lists again', async () => {
    const nova = await startNova({ maxTotalCores: 8 });
    nova.addServer({ flavorId: '2' });
    nova.causes.staleUsage({ cores: 4 });
    const seen: QuotaWaitInfo[] = [];
    await rejection(settle(guardFor(nova, { maxWaitMs: 5000, baseDelayMs: 10, maxDelayMs: 10, minDelayMs: 10, onWait: (i) => seen.push(i) }).createServer(body('x', '3'))));
    expect(seen.length).toBeGreaterThanOrEqual(10);
    expect(seen.filter((i) => i.finding).map((i) => i.waits)).toEqual([5]);
    expect(seen[4]).toMatchObject({ waits: 5, shortfallCause: 'wrong-books', finding: { kind: 'stale-usage' } });
    expect(seen[0]!.shortfallCause).toBeUndefined();
    // a wait for quota headroom, not for the ledger
    expect(seen.map((i) => i.ledgerOutOfReach)).toEqual(seen.map(() => false));
    // One listing at the 5th wait (5 s < EXPLAIN_MIN_INTERVAL_MS), and one at the time-out.
    expect(listings(nova)).toBe(2);
  });
});
