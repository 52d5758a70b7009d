/**
 * The newcomer's listing (issue 19): a Redis store that was never `vetted` (new, or emptied by a
 * restart: one cannot tell) admits nothing through `acquire` until one holder has listed the servers
 * Nova does not count yet into it (VETTED). Real redis-server, FakeNova (in-process adapter), real
 * clock; generous bounds.
 */
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { startLatencyProxy, type LatencyProxy } from '../../bench/latencyProxy.js';
import { RedisQuotaLedger } from '../../src/redis/index.js';
import { ledgerKeys } from '../../src/redis/options.js';
import { listUncounted } from '../../src/guard/limitsRead.js';
import type { AcquireRequest, LimitsReading } from '../../src/guard/index.js';
import type { NovaClient } from '../../src/nova/index.js';
import { FakeNova } from '../../src/testing/index.js';
import { afterThisTest } from '../cleanup.js';
import { body, clientFor, guardFor } from '../guard/fixtures.js';
import { haveRedis, skipReason, useRedisServer } from './support.js';

const PLACE_TTL_MS = 6000;
const need = (cores: number) => ({ cores, ramMiB: 0, instances: 1 });
const ask = (cores: number): AcquireRequest => ({ place: undefined, needs: need(cores), ttlMs: 60_000, joinIfShort: false });

describe.skipIf(!haveRedis)(`a store never vetted${haveRedis ? '' : ` (${skipReason})`}`, () => {
  const server = useRedisServer();
  let proxy: LatencyProxy | undefined;
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });

  async function nova(options = {}): Promise<{ n: FakeNova; client: NovaClient }> {
    const n = await FakeNova.start({ maxTotalCores: 4, maxTotalInstances: -1, maxTotalRAMSize: -1, ...options });
    afterThisTest(() => n.close());
    return { n, client: clientFor(n) };
  }

  function ledger(url: string, n: FakeNova, holder: string, restartGraceMs?: number, limitsLockMs?: number): RedisQuotaLedger {
    const l = new RedisQuotaLedger({ url, endpoint: n.endpoint, projectId: n.projectId, holder, placeTtlMs: PLACE_TTL_MS, commandTimeoutMs: 2000, ...(restartGraceMs === undefined ? {} : { restartGraceMs }), ...(limitsLockMs === undefined ? {} : { limitsLockMs }) });
    afterThisTest(() => l.close());
    return l;
  }

  const listings = (n: FakeNova): number => n.requests.filter((q) => q.method === 'GET' && q.path === '/servers/detail').length;

  it('a brand-new fleet pays one listing before its first admission, no settle; other holders and later admissions list nothing', async () => {
    const { n, client } = await nova({ maxTotalCores: 8 });
    const a = guardFor(n, { ledger: ledger(server.url, n, 'a'), waitForActive: false }, client);
    const t0 = Date.now();
    await a.createServer(body('a-1'));
    const firstMs = Date.now() - t0;
    expect(listings(n), 'listings before the first create').toBe(1);
    const firstPost = n.requests.findIndex((q) => q.method === 'POST');
    expect(n.requests.findIndex((q) => q.path === '/servers/detail'), 'the listing comes before the POST').toBeLessThan(firstPost);
    expect(firstMs, 'first create (ms): far below the settle of an emptied store').toBeLessThan(PLACE_TTL_MS / 2);
    const b = guardFor(n, { ledger: ledger(server.url, n, 'b'), waitForActive: false }, client);
    await b.createServer(body('b-1'));
    await a.createServer(body('a-2'));
    expect(listings(n), 'listings after three creates by two holders').toBe(1);
    console.log(`[newcomerVet] brand-new fleet: first create ${firstMs} ms, 1 listing`);
  });

  it("an emptied store: the newcomer holds the cut-off holder's uncounted server, admits only what is left, and the holder's write-back takes the claim over (no double count)", async () => {
    // Builds stay `scheduling` (not counted by Nova) for 30 s.
    const { n, client } = await nova({ buildDelayMs: 40_000, schedulingDelayMs: 30_000 });
    proxy = await startLatencyProxy(server.port, 0);
    const old = ledger(proxy.url, n, 'old');
    const read = async (): Promise<LimitsReading> => ({ absolute: (await client.getLimits()).absolute, requestId: undefined });
    const uncounted = (s: AbortSignal | undefined) => listUncounted(client, s);
    const held = await old.acquire(ask(2), read, undefined, uncounted);
    if (!held.admitted) throw new Error('the old holder was not admitted');
    // Its server: Nova lists it in `scheduling` and does not count it.
    await client.createServer({ ...body('old-1'), metadata: { 'nova-guard-claim-id': held.claim.id } });
    proxy.partition();
    await server.restart();

    const newcomer = ledger(server.url, n, 'newcomer');
    const before = listings(n);
    // /limits says 4 cores free; the store holds the old server's 2 once the newcomer listed it.
    const four = await newcomer.acquire(ask(4), read, undefined, uncounted);
    expect(listings(n) - before, 'the newcomer listed once').toBe(1);
    expect(four.admitted, '4 cores on a quota of 4 with 2 held by an uncounted server').toBe(false);
    expect(four.inFlight.cores, 'what the store subtracted').toBe(2);
    const two = await newcomer.acquire(ask(2), read, undefined, uncounted);
    expect(two.admitted, 'the 2 cores left').toBe(true);

    // The old holder is back: its write-back of the same claim id takes the listed one over.
    proxy.heal();
    const until = Date.now() + 15_000;
    while (Date.now() < until && !(await old.renew(held.claim, 60_000).catch(() => false))) await new Promise((r) => setTimeout(r, 50));
    expect(await old.renew(held.claim, 60_000), 'the old holder wrote back').toBe(true);
    expect((await newcomer.inFlight(0)).cores, 'cores the store shows: 2 + 2, not 2 + 2 + 2').toBe(4);
    const ids = await newcomer.liveClaimIds();
    expect(ids).toContain(held.claim.id);
    expect(ids).toHaveLength(2);
    // The claim is the old holder's again: its record (token, holder), not the listed one (token 0).
    const r = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await r.connect();
    afterThisTest(() => r.disconnect());
    const claims = ledgerKeys('nova-guard:', n.endpoint, n.projectId).scope[0]!;
    expect((await r.hget(claims, held.claim.id))?.split(',').slice(3, 5)).toEqual([String(held.claim.token), 'old']);
  }, 60_000);

  it('restartGraceMs: while Redis has been up less than it, acquire on a store never vetted answers "not admitted" at once, with no listing and no /limits read; once it is up longer, it lists', async () => {
    const { n, client } = await nova();
    const read = async (): Promise<LimitsReading> => ({ absolute: (await client.getLimits()).absolute, requestId: undefined });
    const uncounted = (s: AbortSignal | undefined) => listUncounted(client, s);
    const young = ledger(server.url, n, 'young', 3_600_000);
    const t0 = Date.now();
    const refused = await young.acquire(ask(2), read, undefined, uncounted);
    expect(refused.admitted).toBe(false);
    expect(Date.now() - t0, 'answered at once').toBeLessThan(1000);
    expect(n.requests.filter((q) => q.method === 'GET'), 'no listing, no /limits read').toHaveLength(0);
    // Redis has been up at least 2 s by now (the earlier cases); a grace of 1 s has passed.
    const until = Date.now() + 5000;
    let ok = false;
    const grown = ledger(server.url, n, 'grown', 1000);
    while (!ok && Date.now() < until) {
      ok = (await grown.acquire(ask(2), read, undefined, uncounted)).admitted;
      if (!ok) await new Promise((r) => setTimeout(r, 200));
    }
    expect(ok, 'admitted once Redis was up longer than the grace').toBe(true);
    expect(listings(n)).toBe(1);
  });

  it("a create waiting out restartGraceMs tells onWait why: reason 'ledger-settling', no shortfall; QuotaWaitTimeoutError at maxWaitMs, no POST", async () => {
    const { n, client } = await nova();
    const waits: Array<{ reason: string; shortfalls: number; outOfReach: boolean }> = [];
    const g = guardFor(n, { ledger: ledger(server.url, n, 'grace', 3_600_000), maxWaitMs: 300, onWait: (w) => void waits.push({ reason: w.reason, shortfalls: w.shortfalls.length, outOfReach: w.ledgerOutOfReach }) }, client);
    const err = await g.createServer(body('grace-1')).catch((e: unknown) => e as Error);
    expect(err.name).toBe('QuotaWaitTimeoutError');
    expect(waits.length).toBeGreaterThan(0);
    expect(waits.every((w) => w.reason === 'ledger-settling' && w.shortfalls === 0 && !w.outOfReach), JSON.stringify(waits)).toBe(true);
    expect(n.requestsTo('POST', '/servers')).toHaveLength(0);
    await g.close();
  });

  it('while one holder lists, another admits nothing; a listing that fails gives the lock back and the next acquire lists again', async () => {
    const { n, client } = await nova();
    const a = ledger(server.url, n, 'a');
    const b = ledger(server.url, n, 'b');
    const read = async (): Promise<LimitsReading> => ({ absolute: (await client.getLimits()).absolute, requestId: undefined });
    let release: () => void = () => undefined;
    const slow = (s: AbortSignal | undefined) =>
      new Promise<void>((r) => (release = r)).then(() => listUncounted(client, s));
    const first = a.acquire(ask(2), read, undefined, slow);
    await new Promise((r) => setTimeout(r, 200));
    // b gives up after limitsLockMs + commandTimeoutMs (12 s); it is told nothing fits meanwhile.
    let bSettled = false;
    const waiting = b.acquire(ask(2), read, undefined, (s) => listUncounted(client, s)).finally(() => (bSettled = true));
    await new Promise((r) => setTimeout(r, 300));
    expect(n.requests.filter((q) => q.path === '/limits'), 'no /limits read while the store is not vetted').toHaveLength(0);
    expect(bSettled, 'b admitted nothing while a listed').toBe(false);
    release();
    expect((await first).admitted).toBe(true);
    expect((await waiting).admitted).toBe(true);
    expect(listings(n)).toBe(1);

    // a and b go (their claims with them) before Redis restarts empty: left connected, each would
    // reconnect and write its 2 cores back with a settle, and c's admission below would depend on
    // whether ioredis's backoff brought them back before c asked (it did about one run in three).
    await Promise.all([a.close(), b.close()]);
    await server.restart();
    // c's refresh lock lasts 30 s: a lock not given back would hold the next acquire that long.
    const LOCK_MS = 30_000;
    const c = ledger(server.url, n, 'c', undefined, LOCK_MS);
    const failing = async (): Promise<never> => {
      throw new Error('Nova is down');
    };
    await expect(c.acquire(ask(2), read, undefined, failing)).rejects.toThrow('Nova is down');
    const listed = listings(n);
    const t0 = Date.now();
    const again = await c.acquire(ask(2), read, undefined, (s) => listUncounted(client, s));
    const againMs = Date.now() - t0;
    expect(again.admitted, JSON.stringify({ inFlight: again.inFlight, holders: again.holders })).toBe(true);
    expect(listings(n) - listed, 'the next acquire listed again').toBe(1);
    expect(againMs, 'the lock was given back (no wait for it to expire)').toBeLessThan(LOCK_MS / 3);
    console.log(`[newcomerVet] acquire after a failed listing: ${againMs} ms (lock ${LOCK_MS} ms)`);
  }, 60_000);
});
