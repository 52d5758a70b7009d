// Claim leases under a slow POST and a ledger that loses or cannot renew them (issue 19, item 3):
// the floor of leaseTtlMs, the renewal before the POST that covers the whole POST, and a lease lost
// while the create is in flight re-claimed unfenced. Fake timers, FakeNova adapters.
import { describe, expect, it } from 'vitest';
import type { AxiosAdapter } from 'axios';
import { NovaClient } from '../../src/nova/client.js';
import { InProcessQuotaLedger } from '../../src/ledger/inProcess.js';
import type { LedgerClaim } from '../../src/ledger/port.js';
import type { FakeNova } from '../../src/testing/index.js';
import { ValidationError } from '../../src/errors/index.js';
import { settle, useFakeClock } from '../helpers.js';
import { body, clientFor, guardFor, posts, startNova } from './fixtures.js';
import { faulty } from './support/testLedger.js';
import { warnLog } from './support/testLedger.js';

useFakeClock();

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A client (request time limit 60 s) whose POST /servers takes `postMs` before Nova sees it; `posting()` says it was sent. */
function slowPostClient(nova: FakeNova, postMs: number): { client: NovaClient; posting: () => boolean } {
  let sent = false;
  const adapter: AxiosAdapter = async (config) => {
    if (config.method?.toUpperCase() === 'POST' && /\/servers$/.test(config.url ?? '')) {
      sent = true;
      await sleep(postMs);
    }
    return nova.adapter(config);
  };
  const client = new NovaClient({ endpoint: nova.endpoint, token: `admin:${nova.projectId}`, microversion: '2.79', adapter, requestTimeoutMs: 60_000, retry: { minDelayMs: 2, maxDelayMs: 20, maxRetryTimeMs: 2000 } });
  return { client, posting: () => sent };
}

describe('leaseTtlMs', () => {
  it('has a floor of 1000 ms: below it a ValidationError naming the floor, before any request', () => {
    const client = clientFor({ endpoint: 'http://nova.test/v2.1', projectId: 'p', adapter: () => Promise.reject(new Error('no request')) } as unknown as FakeNova);
    expect(() => guardFor({} as never, { leaseTtlMs: 999 }, client)).toThrow(ValidationError);
    expect(() => guardFor({} as never, { leaseTtlMs: 999 }, client)).toThrow(/at least 1000 ms/);
    expect(() => guardFor({} as never, { leaseTtlMs: 1000 }, client)).not.toThrow();
  });
});

describe('a lease under a slow POST', () => {
  it('the renewal before the POST covers it: a POST that takes 40 s with leaseTtlMs 1000 keeps its claim while the ledger cannot renew', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const { client, posting } = slowPostClient(nova, 40_000);
    const inner = new InProcessQuotaLedger({ clock: client.clock });
    // once the POST is sent the ledger cannot be reached: every renewal fails
    const ledger = faulty(inner, (m) => (m === 'renew' && posting() ? 'reject' : 'ok'));
    const guard = guardFor(nova, { ledger, leaseTtlMs: 1000 }, client);
    const run = guard.createServer(body('slow-post'));
    await settle(sleep(39_000));
    expect(posting()).toBe(true);
    expect(inner.activeClaims).toBe(1);
    await settle(run);
    expect(posts(nova).map((p) => p.status)).toEqual([202]);
    expect(guard.stats.unfencedCreates).toBe(0);
  });

  it('a lease found lost while the POST is in flight is re-claimed at once (claimAnyway, same needs), bound to the server, counted and warned once', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const { client, posting } = slowPostClient(nova, 5_000);
    const inner = new InProcessQuotaLedger({ clock: client.clock });
    let lost: LedgerClaim | undefined;
    const bound: string[] = [];
    const ledger = faulty(inner, (m, args) => {
      if (m === 'bind') bound.push((args[0] as LedgerClaim).id);
      if (m !== 'renew' || !posting() || lost) return 'ok';
      // the store lost the claim (a failover without it): gone there, the renewal says so
      lost = args[0] as LedgerClaim;
      void inner.release(lost, 'not-created');
      return 'lose';
    });
    const { logger, warnings } = warnLog();
    const guard = guardFor(nova, { ledger, logger, leaseTtlMs: 1000 }, client);
    const run = guard.createServer(body('unfenced'));
    await settle(sleep(2_000));
    // re-claimed at the first renewal after the POST was sent (1000 / 3 ms later)
    expect(lost).toBeDefined();
    expect(ledger.calls.filter(([m]) => m === 'claimAnyway')).toHaveLength(1);
    expect(inner.activeClaims).toBe(1);
    expect(inner.liveClaimIds()).not.toContain(lost!.id);
    await settle(run);
    expect(guard.stats.unfencedCreates).toBe(1);
    expect(bound).toHaveLength(1);
    expect(bound[0]).not.toBe(lost!.id);
    expect(warnings().filter((m) => m === 'claim lease lost while its create was in flight: re-claimed unfenced')).toHaveLength(1);
    expect(inner.activeClaims).toBe(0);
    expect(guard.inFlightClaims).toBe(0);
  });
});
