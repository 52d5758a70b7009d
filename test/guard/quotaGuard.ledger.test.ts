// QuotaGuard on a QuotaLedger: two guards sharing one InProcessQuotaLedger (no over-commit, FIFO),
// the fencing rule (no POST on a lost lease), the renewal schedule, the fallback when the ledger
// rejects or hangs, and the claim's metadata on the created server. Fake timers, FakeNova adapters.
import { describe, expect, it } from 'vitest';
import type { AxiosAdapter } from 'axios';
import { InProcessQuotaLedger } from '../../src/ledger/inProcess.js';
import { CLAIM_HOLDER_KEY, CLAIM_ID_KEY, CLAIM_TOKEN_KEY } from '../../src/guard/ledgerUse.js';
import { CLAIM_TAG_KEY } from '../../src/guard/lostCreate.js';
import type { LedgerClaim } from '../../src/ledger/port.js';
import type { FakeNova } from '../../src/testing/index.js';
import { AbortError, ValidationError } from '../../src/errors/index.js';
import { T0, rejection, runUntil, settle, useFakeClock } from '../helpers.js';
import { body, clientFor, guardFor, liveServers, posts, startNova } from './fixtures.js';
import { faulty } from './support/testLedger.js';
import { warnLog } from './support/testLedger.js';

useFakeClock();

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** An adapter that samples the fake's cores in use after every answer (the peak). */
function watchPeak(nova: FakeNova): { adapter: AxiosAdapter; peak: () => number } {
  let peak = 0;
  const sample = (): void => {
    peak = Math.max(peak, nova.usage().cores);
  };
  return { adapter: (config) => nova.adapter(config).finally(sample), peak: () => (sample(), peak) };
}

describe('QuotaGuard on a shared InProcessQuotaLedger', () => {
  it('two guards (two clients) share one ledger: no over-commit, no quota 403, every job done', async () => {
    const nova = await startNova({ maxTotalCores: 4, buildDelayMs: 10, deleteDelayMs: 10 });
    const watch = watchPeak(nova);
    const ledger = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    const guards = [0, 1].map(() => guardFor(nova, { ledger, maxWaitMs: 20000, baseDelayMs: 5, maxDelayMs: 40 }, clientFor(nova, watch.adapter)));
    const job = async (i: number): Promise<void> => {
      const g = guards[i % 2]!;
      const s = await g.createServer(body(`job-${i}`));
      await sleep(10);
      await g.client.deleteServer(s.id, { wait: true, intervalMs: 3, timeoutMs: 5000, redeleteAfterMs: 0 });
    };
    const results = await settle(Promise.allSettled(Array.from({ length: 8 }, (_, i) => job(i))));
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
    expect(posts(nova).map((p) => p.status)).toEqual(Array(8).fill(202));
    expect(guards.map((g) => g.stats.quota403s)).toEqual([0, 0]);
    expect(watch.peak()).toBeLessThanOrEqual(4);
    expect(guards.map((g) => g.inFlightClaims)).toEqual([0, 0]);
    expect(ledger.activeClaims).toBe(0);
    expect(liveServers(nova)).toEqual([]);
  });

  it("FIFO across guards: guard A's waiter gets the freed cores before guard B's newcomer, woken by a delete B's client confirms", async () => {
    const nova = await startNova({ maxTotalCores: 2, deleteDelayMs: 20 });
    const holder = nova.addServer({ status: 'ACTIVE', flavorId: '2' }).id;
    const ledger = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    const slow = { ledger, minDelayMs: 60_000, baseDelayMs: 60_000, maxDelayMs: 60_000, maxWaitMs: 600_000, jitter: 0 };
    const a = guardFor(nova, slow);
    const b = guardFor(nova, slow);
    const first = a.createServer(body('first-waiter'));
    await runUntil(() => a.stats.waits > 0);
    const second = b.createServer(body('newcomer'));
    await runUntil(() => b.stats.waits > 0);
    // B's client confirms the delete: A's waiter (another guard, another client) wakes through the ledger
    await settle(b.client.deleteServer(holder, { wait: true, intervalMs: 5 }));
    const s1 = await settle(first);
    expect(nova.getServerState(s1.id)?.name).toBe('first-waiter');
    // woken at the fake ms Nova answered 404 for the holder (its backoff is 60 s): its POST went out that ms
    const gone = nova.requestsTo('GET', `/servers/${holder}`).at(-1)!;
    expect(gone.status).toBe(404);
    expect(posts(nova).map((p) => [p.status, p.timeMs])).toEqual([[202, gone.timeMs]]);
    await settle(a.client.deleteServer(s1.id, { wait: true, intervalMs: 5 }));
    const s2 = await settle(second);
    expect(nova.getServerState(s2.id)?.name).toBe('newcomer');
    expect(posts(nova).map((p) => p.status)).toEqual([202, 202]);
  });
});

describe('leases and fencing', () => {
  it('a lost lease means no POST: the call goes back to admission and posts with a new claim', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    let lose = 2;
    const ledger = faulty(inner, (m) => (m === 'renew' && lose-- > 0 ? 'lose' : 'ok'));
    // a lease shorter than the POST's cover: renewed right before each POST
    const guard = guardFor(nova, { ledger, leaseTtlMs: 1000, baseDelayMs: 100, minDelayMs: 100, maxDelayMs: 1000, jitter: 0 });
    const s = await settle(guard.createServer(body('fenced')));
    expect(posts(nova)).toHaveLength(1);
    // claims 1 and 2 lost their leases before their POST: the server carries claim 3
    expect(nova.getServerState(s.id)?.metadata[CLAIM_TOKEN_KEY]).toBe('3');
    expect(ledger.calls.filter(([m]) => m === 'acquire')).toHaveLength(3);
    expect(inner.activeClaims).toBe(0);
    expect(guard.inFlightClaims).toBe(0);
  });

  it('a ledger that keeps losing leases: 0 POSTs while maxWaitMs lasts, each lost claim released', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    const ledger = faulty(inner, (m) => (m === 'renew' ? 'lose' : 'ok'));
    const guard = guardFor(nova, { ledger, leaseTtlMs: 1000, maxWaitMs: 60_000 });
    const controller = new AbortController();
    const run = guard.createServer(body('never'), { signal: controller.signal });
    await runUntil(() => ledger.calls.filter(([m]) => m === 'renew').length >= 4);
    expect(posts(nova)).toHaveLength(0);
    expect(inner.activeClaims).toBe(0);
    controller.abort();
    expect(await settle(rejection(run))).toBeInstanceOf(AbortError);
    expect(posts(nova)).toHaveLength(0);
    expect(guard.inFlightClaims).toBe(0);
  });

  it('renews right before the POST, then every leaseTtlMs / 3 until the server is ACTIVE', async () => {
    // The whole build is `scheduling`: the claim is held until ACTIVE.
    const nova = await startNova({ maxTotalCores: 10, buildDelayMs: 2000, schedulingDelayMs: 2000 });
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    const ledger = faulty(inner);
    const guard = guardFor(nova, { ledger, leaseTtlMs: 1500, activeIntervalMs: 50 });
    await settle(guard.createServer(body('slow-build')));
    const post = posts(nova)[0]!.timeMs - T0;
    expect(post).toBe(0);
    const renewals = ledger.calls.filter(([m]) => m === 'renew').map(([, t]) => t);
    // at the POST (stretched to cover it: leaseTtlMs is shorter than the POST's time limit), back to
    // leaseTtlMs once the POST answered, then 500, 1000, ... while BUILD lasts (ACTIVE seen at the poll after 2000 ms)
    expect(renewals).toEqual([0, 0, 500, 1000, 1500, 2000]);
    expect(ledger.calls.map(([m]) => m).filter((m) => m !== 'renew')).toEqual(['acquire', 'bind', 'release']);
    expect(inner.activeClaims).toBe(0);
  });
});

describe('fallback when the ledger fails', () => {
  it('a ledger that rejects: one warning, creates still succeed on the private ledger, the next call tries the ledger again', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    let down = true;
    const ledger = faulty(inner, () => (down ? 'reject' : 'ok'));
    const { logger, warnings } = warnLog();
    const guard = guardFor(nova, { ledger, logger });
    await settle(Promise.all([guard.createServer(body('a')), guard.createServer(body('b'))]));
    expect(posts(nova).map((p) => p.status)).toEqual([202, 202]);
    // a store never reached (everReached false) may be restarting: tried for NEVER_REACHED_WAIT_MS (3 s), then alone
    expect(posts(nova).every((p) => p.timeMs - T0 >= 3000)).toBe(true);
    expect(warnings().filter((m) => /quota ledger \(test\) failed/.test(m))).toHaveLength(1);
    const fallbacks = guard.stats.ledgerFallbacks;
    expect(fallbacks).toBeGreaterThanOrEqual(2);
    expect(guard.inFlightClaims).toBe(0);
    down = false;
    const before = ledger.calls.length;
    await settle(guard.createServer(body('c')));
    // the renewal right before the POST, every time (the fencing point: it marks the claim posting)
    expect(ledger.calls.slice(before).map(([m]) => m)).toEqual(['acquire', 'renew', 'bind', 'release']);
    expect(guard.stats.ledgerFallbacks).toBe(fallbacks);
    expect(inner.activeClaims).toBe(0);
  });

  it('a ledger that hangs: each call bounded by ledgerTimeoutMs, the create goes on', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    const ledger = faulty(inner, () => 'hang');
    const { logger, warnings } = warnLog();
    const guard = guardFor(nova, { ledger, logger, ledgerTimeoutMs: 250 });
    const s = await settle(guard.createServer(body('patient')));
    // each ledger call ends at ledgerTimeoutMs; a store never reached is tried for NEVER_REACHED_WAIT_MS (3 s), then the create goes on alone
    const [post] = posts(nova);
    expect(post!.status).toBe(202);
    expect(post!.timeMs - T0).toBeGreaterThanOrEqual(3000);
    expect(post!.timeMs - T0).toBeLessThan(3000 + 2 * 250);
    expect(nova.getServerState(s.id)?.name).toBe('patient');
    expect(warnings().filter((m) => /quota ledger \(test\) failed/.test(m))).toHaveLength(1);
    expect(guard.stats.ledgerFallbacks).toBeGreaterThanOrEqual(1);
    expect(guard.inFlightClaims).toBe(0);
  });

  it('an acquire that answers after ledgerTimeoutMs: the call goes on, the late claim is released on the ledger that gave it', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    const ledger = faulty(inner);
    let late = 1;
    const own = ledger.acquire;
    // the store takes the claim at once, its answer comes 500 ms later (a slow network)
    ledger.acquire = async (request, read, signal) => {
      const a = await own(request, read, signal);
      if (late-- > 0) await sleep(500);
      return a;
    };
    const guard = guardFor(nova, { ledger, ledgerTimeoutMs: 100 });
    await settle(guard.createServer(body('on-time')));
    // the first acquire is abandoned at 100 ms; the next one (a backoff step later) admits on the ledger
    const [post] = posts(nova).map((p) => p.timeMs - T0);
    expect(post).toBeGreaterThanOrEqual(100);
    expect(post).toBeLessThan(500);
    await settle(sleep(1000));
    // the late claim given back when its answer came; the other release is the POSTed claim's
    expect(ledger.calls.filter(([m]) => m === 'release').map(([, t]) => t)).toContain(500);
    expect(inner.activeClaims).toBe(0);
    expect(guard.stats.ledgerFallbacks).toBe(1);
  });

  it('a claim is released on the ledger it came from: admitted on the shared ledger, renew fails once, the call is admitted on the ledger again after a backoff step (no POST on the fallback)', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    const released: string[] = [];
    let renews = 0;
    const ledger = faulty(inner, (m, args) => {
      if (m === 'release') released.push((args[0] as LedgerClaim).id);
      return m === 'renew' && renews++ === 0 ? 'reject' : 'ok';
    });
    const guard = guardFor(nova, { ledger, leaseTtlMs: 1000 });
    const s = await settle(guard.createServer(body('moved')));
    const admitted = ledger.calls.filter(([m]) => m === 'acquire');
    expect(admitted).toHaveLength(2);
    // the second admission after a backoff step, not at once
    expect(admitted[1]![1]).toBeGreaterThan(admitted[0]![1]);
    expect(released).toHaveLength(2);
    expect(inner.activeClaims).toBe(0);
    // the POST carries the second claim of the shared ledger, not the first one released above
    const postedClaim = nova.getServerState(s.id)?.metadata[CLAIM_ID_KEY];
    expect(postedClaim).not.toBe(released[0]);
    expect(postedClaim).toBe(released[1]);
    expect(guard.stats.ledgerFallbacks).toBe(1);
    expect(guard.inFlightClaims).toBe(0);
  });

  it('a ledger that admits but never renews: no POST while maxWaitMs lasts, admissions spaced by doubling steps, then the POST goes out on the fallback', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    const ledger = faulty(inner, (m) => (m === 'renew' ? 'reject' : 'ok'));
    const guard = guardFor(nova, { ledger, leaseTtlMs: 1000, maxWaitMs: 5000 });
    await settle(guard.createServer(body('patient')));
    expect(posts(nova).map((p) => [p.status, p.timeMs - T0 >= 5000])).toEqual([[202, true]]);
    // maxDelayMs 80: about one admission per 80 ms, not one per few ms
    expect(ledger.calls.filter(([m]) => m === 'acquire').length).toBeLessThan(5000 / 80 + 10);
    expect(inner.activeClaims).toBe(0);
    expect(guard.inFlightClaims).toBe(0);
  });

  it('a GET /limits error is Nova\'s, not a ledger failure: no fallback', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    nova.inject({ method: 'GET', path: '/limits', status: 500, times: 10 });
    const guard = guardFor(nova);
    await settle(rejection(guard.headroom()));
    expect(guard.stats.ledgerFallbacks).toBe(0);
  });
});

describe('what a claim creates is tagged', () => {
  it('every POST carries the call tag, the claim id, the fencing token and the holder', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const ledger = new InProcessQuotaLedger({ clock: clientFor(nova).clock, holder: 'ci-host-3:4242' });
    const guard = guardFor(nova, { ledger });
    const s = await settle(guard.createServer({ ...body('tagged'), metadata: { job: '7' } }));
    const md = nova.getServerState(s.id)!.metadata;
    expect(md).toEqual({
      job: '7',
      [CLAIM_TAG_KEY]: expect.stringMatching(/^[0-9a-f-]{36}$/),
      [CLAIM_ID_KEY]: expect.stringMatching(/^[0-9a-f-]{36}$/),
      [CLAIM_TOKEN_KEY]: '1',
      [CLAIM_HOLDER_KEY]: 'ci-host-3:4242',
    });
    expect(['nova-guard-claim', 'nova-guard-claim-id', 'nova-guard-token', 'nova-guard-holder']).toEqual([CLAIM_TAG_KEY, CLAIM_ID_KEY, CLAIM_TOKEN_KEY, CLAIM_HOLDER_KEY]);
  });

  it('a holder longer than 255 characters is cut to Nova\'s metadata limit', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const guard = guardFor(nova, { ledger: new InProcessQuotaLedger({ clock: clientFor(nova).clock, holder: 'h'.repeat(300) }) });
    const s = await settle(guard.createServer(body('long')));
    expect(nova.getServerState(s.id)!.metadata[CLAIM_HOLDER_KEY]).toBe('h'.repeat(255));
  });

  it('withQuotaGuard hands fn the claim (id, token, holder, metadata) as its second argument', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const ledger = new InProcessQuotaLedger({ clock: clientFor(nova).clock, holder: 'me' });
    const guard = guardFor(nova, { ledger });
    const info = await settle(guard.withQuotaGuard({ cores: 1, ramMiB: 1, instances: 1 }, async (_signal, claim) => claim));
    expect(info).toMatchObject({ token: 1, holder: 'me', claimId: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(info.metadata).toMatchObject({ [CLAIM_ID_KEY]: info.claimId, [CLAIM_TOKEN_KEY]: '1', [CLAIM_HOLDER_KEY]: 'me', [CLAIM_TAG_KEY]: expect.any(String) });
    expect(ledger.activeClaims).toBe(0);
  });
});

describe('ledger options', () => {
  it('are validated with the other options', () => {
    const client = { getLimits: () => undefined } as never;
    expect(() => guardFor({} as never, { leaseTtlMs: 2 }, client)).toThrow(ValidationError);
    expect(() => guardFor({} as never, { leaseTtlMs: Number.POSITIVE_INFINITY }, client)).toThrow(ValidationError);
    expect(() => guardFor({} as never, { ledgerTimeoutMs: 0 }, client)).toThrow(ValidationError);
    expect(() => guardFor({} as never, { ledger: { kind: 'x' } as never }, client)).toThrow(/missing: bindScope, acquire, peek/);
    expect(() => guardFor({} as never, { ledgr: 1 } as never, client)).toThrow(ValidationError);
  });
});
