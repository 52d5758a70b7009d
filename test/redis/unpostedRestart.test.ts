/**
 * A create admitted but not yet POSTed by a holder cut off across an empty Redis restart (issue 30,
 * item 6). Holder a's guard is admitted for the whole quota and cut off (a partitioned latency
 * proxy) right before its renewal before the POST; Redis restarts empty; a newcomer b lists (the
 * store is not vetted), is admitted and POSTs; a comes back and writes back. Before, a's write-back
 * restored its claim without an admission check, its renewal answered true and both creates went
 * out: 4 of 2 cores held at Nova. Now only posting claims are restored: a's renewal answers false
 * and a goes back through admission, so it POSTs only once b's server is gone.
 *
 * Real redis-server, FakeNova (in-process adapter, legacy counting: a server in `scheduling` is a
 * build request Nova does not count), real clock, generous bounds. The one thing held is a's
 * renewal right before its POST: a pass-through of a's real Redis ledger holds that call until the
 * test has cut a off, emptied the store, let b create and healed the partition (what a slow host
 * between its admission and its POST does, made certain).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startLatencyProxy, type LatencyProxy } from '../../bench/latencyProxy.js';
import { RedisQuotaLedger } from '../../src/redis/index.js';
import type { LedgerClaim, QuotaLedger } from '../../src/ledger/index.js';
import { FakeNova } from '../../src/testing/index.js';
import { afterThisTest } from '../cleanup.js';
import { body, clientFor, guardFor } from '../guard/fixtures.js';
import { haveRedis, skipReason, until, useRedisServer } from './support.js';

/** The core quota: one server of flavor '2' (2 vcpus). */
const QUOTA = 2;
const PLACE_TTL_MS = 3000;

/** `ledger` with its first `renew` held until `open()` (every other member passes through). */
function holdFirstRenew(ledger: RedisQuotaLedger): { ledger: QuotaLedger; reached: Promise<void>; open: () => void; answer: () => boolean | undefined } {
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  let reach!: () => void;
  const reached = new Promise<void>((r) => (reach = r));
  let held = false;
  let answer: boolean | undefined;
  const wrapped = new Proxy(ledger, {
    get(target, key) {
      if (key === 'renew') {
        return async (claim: LedgerClaim, ttlMs: number): Promise<boolean> => {
          if (held) return target.renew(claim, ttlMs);
          held = true;
          reach();
          await gate;
          answer = await target.renew(claim, ttlMs);
          return answer;
        };
      }
      const v: unknown = Reflect.get(target, key, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { ledger: wrapped as QuotaLedger, reached, open, answer: () => answer };
}

describe.skipIf(!haveRedis)(`a create admitted but not POSTed across an empty Redis restart${haveRedis ? '' : ` (${skipReason})`}`, () => {
  const server = useRedisServer();
  let proxy: LatencyProxy | undefined;
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });

  function ledger(url: string, n: FakeNova, holder: string): RedisQuotaLedger {
    const l = new RedisQuotaLedger({ url, endpoint: n.endpoint, projectId: n.projectId, holder, placeTtlMs: PLACE_TTL_MS, commandTimeoutMs: 2000 });
    afterThisTest(() => l.close());
    return l;
  }

  it("the cut-off holder's renewal right before its POST answers false: it re-admits and POSTs only once the newcomer's server is gone; never more cores held at Nova than the quota", async () => {
    // Builds stay `scheduling` (not counted by Nova) for 2 s of their 2.5 s.
    const n = await FakeNova.start({ maxTotalCores: QUOTA, maxTotalInstances: -1, maxTotalRAMSize: -1, buildDelayMs: 2500, schedulingDelayMs: 2000, deleteDelayMs: 100 });
    afterThisTest(() => n.close());
    const posts = () => n.requestsTo('POST', '/servers');
    proxy = await startLatencyProxy(server.port, 0);
    const realA = ledger(proxy.url, n, 'a');
    const a = holdFirstRenew(realA);
    const guardA = guardFor(n, { ledger: a.ledger, waitForActive: false, maxWaitMs: 60_000 }, clientFor(n));
    afterThisTest(() => guardA.close());
    const t0 = Date.now();
    const aRun = guardA.createServer(body('a-1')).then(
      (s) => ({ id: s.id, atMs: Date.now() - t0 }),
      (e: unknown) => ({ error: e as Error, atMs: Date.now() - t0 }),
    );
    // a is admitted for the whole quota (on a store it vetted) and is about to renew before its POST.
    await a.reached;
    expect(posts(), 'no POST before the renewal').toHaveLength(0);

    // a is cut off; Redis restarts empty; the newcomer b lists, is admitted and POSTs.
    proxy.partition();
    await server.restart();
    const guardB = guardFor(n, { ledger: ledger(server.url, n, 'b'), activeTimeoutMs: 20_000, maxWaitMs: 60_000 }, clientFor(n));
    afterThisTest(() => guardB.close());
    const listings = () => n.requests.filter((q) => q.method === 'GET' && q.path === '/servers/detail').length;
    const listedBefore = listings();
    const bRun = guardB.createServer(body('b-1'));
    expect(await until(() => posts().length >= 1, 15_000), "b's POST").toBe(true);
    expect(listings() - listedBefore, 'b listed the emptied store before its admission').toBe(1);
    const bPostMs = Date.now() - t0;

    // a comes back: its connection is ready again (the write-back runs first), then its renewal goes.
    proxy.heal();
    const back = Date.now();
    let reached = false;
    while (!reached && Date.now() - back < 15_000) {
      reached = await realA.probe().then(
        () => true,
        () => false,
      );
      if (!reached) await new Promise((r) => setTimeout(r, 50));
    }
    expect(reached, 'a reached Redis again').toBe(true);
    a.open();

    // b's server goes ACTIVE (counted); a must not POST while it holds the quota.
    const bServer = await bRun;
    await new Promise((r) => setTimeout(r, 1500));
    const aPostsWhileB = posts().length - 1;
    const delStart = Date.now() - t0;
    await guardB.client.deleteServer(bServer.id, { wait: true, intervalMs: 20 });
    const deletedMs = Date.now() - t0;
    const got = await aRun;
    const r = n.quotaRecord();
    const aPost = posts()[1];
    console.log(
      `[unpostedRestart] b POSTed at ${bPostMs} ms; a's renewal ${a.answer()}; a POSTs while b's server held the quota: ${aPostsWhileB}; b's server deleted ${delStart}-${deletedMs} ms; ` +
        `a's create ${'error' in got ? `failed: ${got.error.message}` : 'done'} at ${got.atMs} ms; peak ${r.peakCores}/${r.limits.cores} cores held, ${r.recheckErrors} recheck ERRORs, ${r.quota403s} quota 403s`,
    );
    expect.soft(a.answer(), "a's held renewal right before its POST").toBe(false);
    expect.soft(r.peakCores, 'most cores held at once at Nova').toBeLessThanOrEqual(QUOTA);
    expect.soft(aPostsWhileB, "a's POSTs while b's server held the quota").toBe(0);
    expect.soft(r.recheckErrors, 'recheck ERRORs').toBe(0);
    expect('error' in got ? got.error.message : 'done', "a's create").toBe('done');
    expect(posts(), 'POSTs: b, then a once').toHaveLength(2);
    expect(got.atMs, "a's create done after b's server was deleted (ms)").toBeGreaterThanOrEqual(deletedMs);
    expect(aPost!.status, "a's POST accepted").toBe(202);
    expect(guardA.stats.unfencedCreates, 'unfenced creates').toBe(0);
  }, 90_000);
});
