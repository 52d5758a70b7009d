/**
 * A Redis restarted empty while one holder cannot reach it (issue 19): every holder's claims are gone
 * from the store until that holder writes them back, and a holder whose write-back comes late (cut
 * off: `bench/latencyProxy.ts` partitioned) must find the others still settling, not admitting on an
 * undercount. Real redis-server, real clock, ledgers only (no guard, no Nova): the quota is the
 * headroom every admission is asked on, the way a fresh `/limits` reading that does not count the
 * servers Nova has not counted yet would give it.
 */
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { startLatencyProxy, type LatencyProxy } from '../../bench/latencyProxy.js';
import { RedisQuotaLedger } from '../../src/redis/index.js';
import { ledgerKeys } from '../../src/redis/options.js';
import { ASSERT } from '../../src/redis/scripts.js';
import type { LedgerClaim } from '../../src/guard/index.js';
import { afterThisTest } from '../cleanup.js';
import { haveRedis, skipReason, useRedisServer } from './support.js';

const ENDPOINT = 'http://nova.example:8774/v2.1';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const need = (cores: number) => ({ cores, ramMiB: 0, instances: 1 });
/** The core quota every admission is asked on. */
const QUOTA = 4;
/** The holder lease: the settle after an empty restart; the old settle was a third of it (2 s). */
const PLACE_TTL_MS = 6000;
/** How long the late holder stays cut off after the first holder wrote back: past the old settle, within the new. */
const CUT_OFF_MS = 3500;

describe.skipIf(!haveRedis)(`an empty Redis restart with a holder cut off${haveRedis ? '' : ` (${skipReason})`}`, () => {
  const server = useRedisServer();
  let proxy: LatencyProxy | undefined;
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });

  /** `projectId`: a case that must not find an earlier case's settle takes a scope of its own. */
  function ledger(url: string, holder: string, projectId = 'restart'): RedisQuotaLedger {
    const l = new RedisQuotaLedger({ url, endpoint: ENDPOINT, projectId, holder, placeTtlMs: PLACE_TTL_MS, commandTimeoutMs: 1000 });
    afterThisTest(() => l.close());
    return l;
  }

  /** `renew` until it answers true (the holder is back and wrote back its claims), or `ms` ran out. */
  async function backWithin(l: RedisQuotaLedger, claim: LedgerClaim, ms: number): Promise<boolean> {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      if (await l.renew(claim, 60_000).catch(() => false)) return true;
      await sleep(50);
    }
    return false;
  }

  it("a holder whose write-back comes after the others' first settle: nothing admitted while its claims are not back; admitted + held cores never above the quota", async () => {
    proxy = await startLatencyProxy(server.port, 0);
    const a = ledger(server.url, 'a');
    const late = ledger(proxy.url, 'late');
    const c = ledger(server.url, 'c');
    const mine = await a.admit({ place: undefined, needs: need(2), headroom: { cores: QUOTA }, stamp: 0, ttlMs: 60_000 });
    const theirs = await late.admit({ place: undefined, needs: need(2), headroom: { cores: QUOTA }, stamp: 0, ttlMs: 60_000 });
    if (!mine.admitted || !theirs.admitted) throw new Error('the two claims were not admitted');
    // Each renewed right before its POST, as the guard does: posting, so a write-back restores them.
    expect(await a.renew(mine.claim, 60_000)).toBe(true);
    expect(await late.renew(theirs.claim, 60_000)).toBe(true);
    expect(await c.inFlight(0)).toMatchObject({ cores: 4 });

    // The late holder is cut off, then Redis restarts empty: its 2 cores (a server Nova does not
    // count yet) exist only in its own process until it reaches Redis again.
    proxy.partition();
    await server.restart();
    expect(await backWithin(a, mine.claim, 15_000)).toBe(true);
    const aBack = Date.now();

    // Another holder asks for 2 cores on the quota (a fresh reading that does not count the two
    // uncounted servers) all the time the late holder is away, and a little after it is back.
    const admitted: Array<{ cores: number; atMs: number }> = [];
    let lateBackAtMs: number | undefined;
    let healed = false;
    let claimsSeen = 0;
    while (Date.now() - aBack < 20_000) {
      const atMs = Date.now() - aBack;
      if (!healed && atMs >= CUT_OFF_MS) {
        proxy.heal();
        healed = true;
      }
      const r = await c.admit({ place: undefined, needs: need(2), headroom: { cores: QUOTA }, stamp: 0, ttlMs: 60_000 }).catch(() => undefined);
      if (r?.admitted) admitted.push({ cores: r.claim.needs.cores, atMs });
      if (healed && lateBackAtMs === undefined && (await late.renew(theirs.claim, 60_000).catch(() => false))) lateBackAtMs = Date.now() - aBack;
      if (lateBackAtMs !== undefined) {
        claimsSeen = (await c.inFlight(0)).cores;
        if (Date.now() - aBack > lateBackAtMs + 500) break;
      }
      await sleep(100);
    }
    console.log(`[emptyRestart] late holder back ${lateBackAtMs} ms after the first; admitted meanwhile: ${JSON.stringify(admitted)}`);
    // The case is the one meant: the late holder came back after one heartbeat (the old settle).
    expect(lateBackAtMs, 'the late holder wrote back').toBeGreaterThan(PLACE_TTL_MS / 3);
    // The quota: the two held claims plus whatever was admitted meanwhile.
    const held = 2 + 2 + admitted.reduce((s, x) => s + x.cores, 0);
    expect(held, `cores held + admitted (admitted: ${JSON.stringify(admitted)})`).toBeLessThanOrEqual(QUOTA);
    expect(claimsSeen, 'cores the store shows once the late holder is back').toBe(4);

    // Not stuck: once the late holder's claim ends, the other holder gets its cores.
    await late.release(theirs.claim, 'not-created');
    const freed = Date.now();
    let got = false;
    while (!got && Date.now() - freed < PLACE_TTL_MS + 5000) {
      got = (await c.admit({ place: undefined, needs: need(2), headroom: { cores: QUOTA }, stamp: 0, ttlMs: 60_000 }).catch(() => undefined))?.admitted === true;
      if (!got) await sleep(100);
    }
    expect(got, 'admitted once the late claim ended').toBe(true);
  }, 60_000);

  it('a process that first reaches the store after the empty restart, before the holders that knew it: their write-backs still settle for placeTtlMs, and the store shows every held claim', async () => {
    proxy = await startLatencyProxy(server.port, 0);
    const a = ledger(proxy.url, 'a');
    const b = ledger(proxy.url, 'b');
    const mine = await a.admit({ place: undefined, needs: need(2), headroom: { cores: QUOTA }, stamp: 0, ttlMs: 60_000 });
    const theirs = await b.admit({ place: undefined, needs: need(2), headroom: { cores: QUOTA }, stamp: 0, ttlMs: 60_000 });
    if (!mine.admitted || !theirs.admitted) throw new Error('the two claims were not admitted');
    // Both POSTed (renewed right before, as the guard does).
    expect(await a.renew(mine.claim, 60_000)).toBe(true);
    expect(await b.renew(theirs.claim, 60_000)).toBe(true);
    // a and b cannot reach Redis while it restarts empty; a brand-new process reaches it first and
    // reads /limits (which takes an order number: the store no longer looks emptied).
    proxy.partition();
    await server.restart();
    const late = ledger(server.url, 'newcomer');
    await late.limits(async () => ({ absolute: { maxTotalCores: QUOTA, totalCoresUsed: 0 }, requestId: undefined }), undefined);
    proxy.heal();
    expect(await backWithin(a, mine.claim, 15_000), 'a wrote back').toBe(true);
    expect(await backWithin(b, theirs.claim, 15_000), 'b wrote back').toBe(true);
    const r = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await r.connect();
    afterThisTest(() => r.disconnect());
    const keys = ledgerKeys('nova-guard:', ENDPOINT, 'restart').scope;
    // The settle of an emptied store (placeTtlMs), not the one heartbeat of a store that kept its state.
    expect(await r.pttl(keys[14]!), 'settle left after both write-backs (ms)').toBeGreaterThan(PLACE_TTL_MS / 3 + 500);
    expect((await late.inFlight(0)).cores, 'cores the store shows').toBe(4);
    const asked = await late.admit({ place: undefined, needs: need(2), headroom: { cores: QUOTA + 2 }, stamp: 0, ttlMs: 60_000 });
    expect(asked.admitted, 'admitted while settling').toBe(false);
  }, 60_000);

  it('a claim only admitted (its POST not sent) by a holder cut off across an empty restart is not written back: its renewal right before the POST answers false, its posting claim comes back, the newcomer keeps what it admitted; admitted again once there is room', async () => {
    proxy = await startLatencyProxy(server.port, 0);
    const a = ledger(proxy.url, 'a', 'restart-unposted');
    // a: one claim POSTed (renewed right before its POST, as the guard does) and one only admitted,
    // on a quota of 4 that Nova does not count any of yet.
    const posted = await a.admit({ place: undefined, needs: need(2), headroom: { cores: QUOTA }, stamp: 0, ttlMs: 60_000 });
    const unposted = await a.admit({ place: undefined, needs: need(2), headroom: { cores: QUOTA }, stamp: 0, ttlMs: 60_000 });
    if (!posted.admitted || !unposted.admitted) throw new Error('the two claims were not admitted');
    expect(await a.renew(posted.claim, 60_000)).toBe(true);
    // a is cut off before its second POST; Redis restarts empty; a newcomer lists (it sees the
    // POSTed server, 2 cores: held here by its headroom of 2) and admits the 2 cores left.
    proxy.partition();
    await server.restart();
    const c = ledger(server.url, 'newcomer', 'restart-unposted');
    const newcomer = await c.admit({ place: undefined, needs: need(2), headroom: { cores: QUOTA - 2 }, stamp: 0, ttlMs: 60_000 });
    expect(newcomer.admitted, 'the newcomer admitted the 2 cores left').toBe(true);
    expect(await c.renew((newcomer as { claim: LedgerClaim }).claim, 60_000)).toBe(true);
    // a comes back and writes back.
    proxy.heal();
    expect(await backWithin(a, posted.claim, 15_000), 'a wrote back its posting claim').toBe(true);
    const renewed = await a.renew(unposted.claim, 60_000);
    const shown = (await c.inFlight(0)).cores;
    console.log(`[emptyRestart] unposted claim: renew ${renewed}; cores the store shows: ${shown} of ${QUOTA}`);
    expect(renewed, 'renewal right before the POST of the claim only admitted').toBe(false);
    expect(shown, 'cores the store shows: the posting claim and the newcomer\'s').toBe(4);
    // Back through admission: nothing while the newcomer's claim holds the rest (and the store
    // settles); admitted once it ends.
    expect((await a.admit({ place: undefined, needs: need(2), headroom: { cores: QUOTA }, stamp: 0, ttlMs: 60_000 })).admitted).toBe(false);
    await c.release((newcomer as { claim: LedgerClaim }).claim, 'not-created');
    const freed = Date.now();
    let again = false;
    while (!again && Date.now() - freed < PLACE_TTL_MS + 5000) {
      again = (await a.admit({ place: undefined, needs: need(2), headroom: { cores: QUOTA }, stamp: 0, ttlMs: 60_000 }).catch(() => undefined))?.admitted === true;
      if (!again) await sleep(100);
    }
    expect(again, 'a admitted again once the newcomer\'s claim ended').toBe(true);
  }, 60_000);

  it("the write-back's script: an emptied store (no order counter) settles for placeTtlMs, a kept one for placeTtlMs / 3; a heartbeat that finds the store emptied settles too, one of a holder that saw no order number leaves the counter missing", async () => {
    const r = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await r.connect();
    afterThisTest(() => r.disconnect());
    let n = 0;
    /** ASSERT on a new scope: `maxOrder` the highest order number the holder saw, `readd` the write-back flag. */
    const run = async (maxOrder: number, readd: boolean, keys = ledgerKeys('nova-guard:', ENDPOINT, `script${(n += 1)}`).scope) => {
      // ARGV: counted retention, instance, holder lease, then placeTtlMs, token, seq, order, 0 places, the flag.
      await r.eval(ASSERT, keys.length, ...keys, 600_000, 'h1', PLACE_TTL_MS, PLACE_TTL_MS, 0, 0, maxOrder, 0, readd ? '1' : '0');
      return { settle: await r.pttl(keys[14]!), order: await r.get(keys[11]!), keys };
    };
    const emptied = await run(0, true);
    expect(emptied.settle).toBeGreaterThan(PLACE_TTL_MS - 1000);
    expect(emptied.settle).toBeLessThanOrEqual(PLACE_TTL_MS);
    expect(emptied.order).not.toBeNull();
    // The store kept its state (the counter is there): one heartbeat, and a longer settle stays.
    const kept = await run(0, true, (await run(7, false)).keys);
    expect(kept.settle).toBeGreaterThan(PLACE_TTL_MS - 1000);
    await r.del(kept.keys[14]!);
    const ordinary = await run(0, true, kept.keys);
    expect(ordinary.settle).toBeGreaterThan(0);
    expect(ordinary.settle).toBeLessThanOrEqual(PLACE_TTL_MS / 3);
    // A heartbeat (no write-back) of a holder that saw order numbers, on an emptied store.
    const beat = await run(7, false);
    expect(beat.settle).toBeGreaterThan(PLACE_TTL_MS - 1000);
    expect(Number(beat.order)).toBeGreaterThanOrEqual(7);
    // A heartbeat of a holder that saw none: no settle, and the counter stays missing for the write-back.
    const idle = await run(0, false);
    expect(idle.settle).toBe(-2);
    expect(idle.order).toBeNull();
    expect((await run(0, true, idle.keys)).settle).toBeGreaterThan(PLACE_TTL_MS - 1000);
  });

  it("the write-back's script restores a claim the store lost only when it is posting (renewed before its POST, claimed anyway, or bound); a claim the store still has is kept either way", async () => {
    const r = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await r.connect();
    afterThisTest(() => r.disconnect());
    const keys = ledgerKeys('nova-guard:', ENDPOINT, 'script-posting').scope;
    // One claim the store still has (only admitted), then the store is emptied of the rest.
    await r.hset(keys[0]!, 'kept', '2,0,1,3,h1,');
    await r.zadd(keys[1]!, Date.now() + 60_000, 'kept');
    // ARGV: counted retention, instance, holder lease, then placeTtlMs, token, seq, order, 0 places,
    // claims x (id, record, remaining ttl, posting), the write-back flag.
    const claims = [
      ['posting', '2,0,1,4,h1,', 60_000, '1'],
      ['bound', '2,0,1,5,h1,server-1', 60_000, '1'],
      ['admitted', '2,0,1,6,h1,', 60_000, '0'],
      ['kept', '2,0,1,3,h1,', 60_000, '0'],
    ].flat();
    const answer = (await r.eval(ASSERT, keys.length, ...keys, 600_000, 'h1', PLACE_TTL_MS, PLACE_TTL_MS, 6, 0, 0, 0, ...claims, '1')) as unknown[];
    expect([answer[0], answer[2]], '{restored, holders, dropped}').toEqual([2, 1]);
    expect((await r.zrange(keys[1]!, 0, -1)).sort()).toEqual(['bound', 'kept', 'posting']);
    expect(await r.hget(keys[0]!, 'admitted')).toBeNull();
  });
});
