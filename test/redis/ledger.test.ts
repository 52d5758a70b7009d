/** RedisQuotaLedger against a real redis-server (never a mock), on the real clock with generous bounds. */
import { inspect } from 'node:util';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { RedisLedgerError, RedisQuotaLedger } from '../../src/redis/index.js';
import type { RedisQuotaLedgerOptions } from '../../src/redis/index.js';
import { ValidationError } from '../../src/errors/index.js';
import { NovaClient } from '../../src/nova/index.js';
import type { LedgerClaim } from '../../src/guard/index.js';
import { afterThisTest } from '../cleanup.js';
import { startLatencyProxy } from '../../bench/latencyProxy.js';
import { ledgerKeys } from '../../src/redis/options.js';
import { haveRedis, RedisServer, skipReason, useRedisServer } from './support.js';

const ENDPOINT = 'http://nova.example:8774/v2.1';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const need = (cores: number, ramMiB = 0, instances = 1) => ({ cores, ramMiB, instances });

describe.skipIf(!haveRedis)(`RedisQuotaLedger on a real redis-server${haveRedis ? '' : ` (${skipReason})`}`, () => {
  const server = useRedisServer();
  let n = 0;

  function ledger(extra: Partial<RedisQuotaLedgerOptions> = {}): RedisQuotaLedger {
    const l = new RedisQuotaLedger({ url: server.url, endpoint: ENDPOINT, projectId: `p${n}`, holder: `h${Math.random().toString(36).slice(2, 8)}`, ...extra });
    afterThisTest(() => l.close());
    return l;
  }
  function project(): string {
    n += 1;
    return `p${n}`;
  }

  it('admission across holders with random concurrent claims never over-commits the vector limit', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.record({ who: fc.nat(3), cores: fc.integer({ min: 1, max: 4 }), ram: fc.integer({ min: 0, max: 3 }) }), { minLength: 1, maxLength: 24 }), async (asks) => {
        const projectId = project();
        const ledgers = [0, 1, 2, 3].map(() => ledger({ projectId }));
        const limit = { cores: 8, ramMiB: 6, instances: 5 };
        const results = await Promise.all(asks.map((a) => ledgers[a.who]!.admit({ place: undefined, needs: need(a.cores, a.ram), headroom: limit, stamp: 0, ttlMs: 60_000 })));
        const held = results.flatMap((r) => (r.admitted ? [r.claim] : []));
        const sum = (k: 'cores' | 'ramMiB' | 'instances') => held.reduce((s, c) => s + c.needs[k], 0);
        expect(sum('cores')).toBeLessThanOrEqual(8);
        expect(sum('ramMiB')).toBeLessThanOrEqual(6);
        expect(sum('instances')).toBeLessThanOrEqual(5);
        // Fencing tokens strictly increase and are unique across holders.
        const tokens = held.map((c) => c.token).sort((a, b) => a - b);
        expect(new Set(tokens).size).toBe(tokens.length);
        await Promise.all(ledgers.map((l) => l.close()));
      }),
      { numRuns: 15 },
    );
  });

  it('fencing tokens strictly increase in the order claims are taken', async () => {
    const [a, b] = [ledger(), ledger()];
    const tokens: number[] = [];
    for (let i = 0; i < 6; i++) tokens.push((await (i % 2 ? a : b).claimAnyway(need(1), 10_000)).token);
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]!);
  });

  it('inFlight reports live claims and counted claims newer than the reading, without claiming', async () => {
    const projectId = project();
    const [a, b] = [ledger({ projectId, limitsMaxAgeMs: 0 }), ledger({ projectId, limitsMaxAgeMs: 0 })];
    const before = await a.limits(async () => ({ absolute: {}, requestId: undefined }), undefined);
    expect(await b.inFlight(before.stamp)).toEqual({ cores: 0, ramMiB: 0, instances: 0 });
    const claim = await a.claimAnyway(need(2, 512), 60_000);
    expect(await b.inFlight(before.stamp)).toEqual({ cores: 2, ramMiB: 512, instances: 1 });
    await a.release(claim, 'counted');
    // Counted after the reading was sent: still subtracted from it; not from a later reading.
    expect(await b.inFlight(before.stamp)).toEqual({ cores: 2, ramMiB: 512, instances: 1 });
    await sleep(5);
    const after = await b.limits(async () => ({ absolute: {}, requestId: undefined }), undefined);
    expect(after.stamp).toBeGreaterThan(before.stamp);
    expect(await b.inFlight(after.stamp + 1)).toEqual({ cores: 0, ramMiB: 0, instances: 0 });
    // A claim that was not created is gone at once.
    const other = await b.claimAnyway(need(1), 60_000);
    await b.release(other, 'not-created');
    expect(await a.inFlight(after.stamp + 1)).toEqual({ cores: 0, ramMiB: 0, instances: 0 });
  });

  it('a kept reading with an unlimited resource (Nova -1, Infinity) is handed out unlimited, not as null', async () => {
    const projectId = project();
    const [a, b] = [ledger({ projectId, limitsMaxAgeMs: 60_000 }), ledger({ projectId, limitsMaxAgeMs: 60_000 })];
    const absolute = { maxTotalCores: 8, totalCoresUsed: 2, maxTotalInstances: Infinity, totalInstancesUsed: 1 };
    await a.limits(async () => ({ absolute, requestId: 'req-1' }), undefined);
    const shared = await b.limits(async () => ({ absolute: {}, requestId: 'never' }), undefined);
    expect(shared).toMatchObject({ shared: true, requestId: 'req-1', absolute });
    expect(shared.absolute.maxTotalInstances).toBe(Infinity);
  });

  it('a confirmed deletion makes the kept reading stale: the next caller reads /limits again, once', async () => {
    const projectId = project();
    const [a, b, c] = [0, 1, 2].map(() => ledger({ projectId, limitsMaxAgeMs: 60_000 })) as [RedisQuotaLedger, RedisQuotaLedger, RedisQuotaLedger];
    const read = (id: string) => async () => ({ absolute: { maxTotalCores: 8, totalCoresUsed: id === 'before' ? 8 : 6 }, requestId: id });
    await a.limits(read('before'), undefined);
    expect(await b.limits(read('never'), undefined)).toMatchObject({ shared: true, requestId: 'before' });
    await sleep(2);
    await a.publishFreed('server-1');
    const after = await b.limits(read('after'), undefined);
    expect(after).toMatchObject({ shared: false, requestId: 'after', absolute: { totalCoresUsed: 6 } });
    // The new reading is sent after the deletion: handed out to the others again.
    expect(await c.limits(read('never'), undefined)).toMatchObject({ shared: true, requestId: 'after' });
  });

  it('serves places FIFO across holders: an older place on host A blocks a newcomer on host B', async () => {
    const projectId = project();
    const [a, b] = [ledger({ projectId }), ledger({ projectId })];
    const room = { cores: 4 };
    const placeA = await a.join(need(4));
    const placeB = await b.join(need(2));
    const late = await b.admit({ place: placeB, needs: need(2), headroom: room, stamp: 0, ttlMs: 10_000 });
    expect(late).toMatchObject({ admitted: false, ahead: { cores: 4, instances: 1 } });
    const first = await a.admit({ place: placeA, needs: need(4), headroom: room, stamp: 0, ttlMs: 10_000 });
    expect(first.admitted).toBe(true);
    if (!first.admitted) return;
    await a.release(first.claim, 'not-created');
    const then = await b.admit({ place: placeB, needs: need(2), headroom: room, stamp: 0, ttlMs: 10_000 });
    expect(then).toMatchObject({ admitted: true, ahead: { cores: 0 } });
  });

  it("a dead holder's place stops blocking the queue once its lease runs out", async () => {
    const projectId = project();
    const b = ledger({ projectId });
    const client = new Redis(server.url);
    const dead = new RedisQuotaLedger({ redis: client, endpoint: ENDPOINT, projectId, placeTtlMs: 1000, holder: 'dead' });
    afterThisTest(() => dead.close());
    await dead.join(need(4));
    const blocked = await b.admit({ place: undefined, needs: need(2), headroom: { cores: 4 }, stamp: 0, ttlMs: 10_000 });
    expect(blocked).toMatchObject({ admitted: false, ahead: { cores: 4 } });
    // The "crash": the holder's connection is gone, its heartbeat cannot reach Redis any more.
    client.disconnect();
    const started = Date.now();
    let admitted = false;
    while (!admitted && Date.now() - started < 10_000) {
      await sleep(100);
      admitted = (await b.admit({ place: undefined, needs: need(2), headroom: { cores: 4 }, stamp: 0, ttlMs: 10_000 })).admitted;
    }
    expect(admitted).toBe(true);
  });

  it("a live holder's heartbeat keeps its place beyond the place TTL, and an admitted place is not brought back", async () => {
    const projectId = project();
    // placeTtlMs at its floor (1000 ms); 2.5 lease lengths pass.
    const a = ledger({ projectId, placeTtlMs: 1000 });
    const b = ledger({ projectId });
    const place = await a.join(need(3));
    await sleep(2500);
    const behind = await b.admit({ place: undefined, needs: need(2), headroom: { cores: 4 }, stamp: 0, ttlMs: 10_000 });
    expect(behind).toMatchObject({ admitted: false, ahead: { cores: 3 } });
    const got = await a.admit({ place, needs: need(3), headroom: { cores: 4 }, stamp: 0, ttlMs: 10_000 });
    expect(got.admitted).toBe(true);
    await sleep(400);
    const after = await b.admit({ place: undefined, needs: need(1), headroom: { cores: 4 }, stamp: 0, ttlMs: 10_000 });
    expect(after).toMatchObject({ admitted: true, ahead: { cores: 0 }, inFlight: { cores: 3 } });
  });

  it('shared reads over time: GET /limits at most once per max age however many ledgers ask', async () => {
    const projectId = project();
    const maxAge = 200;
    const ledgers = Array.from({ length: 8 }, () => ledger({ projectId, limitsMaxAgeMs: maxAge }));
    let gets = 0;
    let calls = 0;
    const read = async () => {
      gets += 1;
      return { absolute: { maxTotalCores: 10 }, requestId: `req-${gets}` };
    };
    const started = Date.now();
    await Promise.all(
      ledgers.map(async (l) => {
        while (Date.now() - started < 1000) {
          const r = await l.limits(read, undefined);
          calls += 1;
          expect(r.ageMs).toBeLessThanOrEqual(maxAge);
          await sleep(10);
        }
      }),
    );
    const elapsed = Date.now() - started;
    expect(calls).toBeGreaterThan(gets * 2);
    expect(gets).toBeGreaterThanOrEqual(1);
    expect(gets).toBeLessThanOrEqual(Math.floor(elapsed / maxAge) + 2);
  });

  it('a lease expires by Redis time when its holder stops renewing; renew is then false', async () => {
    const projectId = project();
    const [a, b] = [ledger({ projectId }), ledger({ projectId })];
    const got = await a.admit({ place: undefined, needs: need(4), headroom: { cores: 4 }, stamp: 0, ttlMs: 600 });
    expect(got.admitted).toBe(true);
    if (!got.admitted) return;
    expect(await a.renew(got.claim, 600)).toBe(true);
    expect((await b.admit({ place: undefined, needs: need(1), headroom: { cores: 4 }, stamp: 0, ttlMs: 10_000 })).admitted).toBe(false);
    await sleep(1300);
    expect((await b.admit({ place: undefined, needs: need(4), headroom: { cores: 4 }, stamp: 0, ttlMs: 10_000 })).admitted).toBe(true);
    expect(await a.renew(got.claim, 10_000)).toBe(false);
    const unknown: LedgerClaim = { id: 'nope', token: 1, needs: need(1), holder: 'x' };
    expect(await a.renew(unknown, 1000)).toBe(false);
  });

  it("subtracts claims released 'counted' at or after the reading's stamp, not before it", async () => {
    const projectId = project();
    const a = ledger({ projectId });
    const reading = await a.limits(async () => ({ absolute: { maxTotalCores: 4 }, requestId: 'req-1' }), undefined);
    const got = await a.admit({ place: undefined, needs: need(4), headroom: { cores: 4 }, stamp: reading.stamp, ttlMs: 10_000 });
    if (!got.admitted) throw new Error('not admitted');
    await a.bind(got.claim, 'server-1');
    await a.release(got.claim, 'counted');
    const old = await a.admit({ place: undefined, needs: need(1), headroom: { cores: 4 }, stamp: reading.stamp, ttlMs: 10_000 });
    expect(old).toMatchObject({ admitted: false, inFlight: { cores: 4 } });
    await sleep(5);
    const fresh = await a.limits(async () => ({ absolute: {}, requestId: 'req-2' }), undefined);
    // The kept reading is younger than limitsMaxAgeMs: handed out again, with its stamp and age.
    expect(fresh).toMatchObject({ requestId: 'req-1', shared: true, stamp: reading.stamp });
    const later = await a.admit({ place: undefined, needs: need(1), headroom: { cores: 1 }, stamp: reading.stamp + 60_000, ttlMs: 10_000 });
    expect(later).toMatchObject({ admitted: true, inFlight: { cores: 0 } });
  });

  it("shared reads: N ledgers waiting together make one GET /limits per max age, not N", async () => {
    const projectId = project();
    const ledgers = Array.from({ length: 12 }, () => ledger({ projectId, limitsMaxAgeMs: 60_000 }));
    let gets = 0;
    const read = async () => {
      gets += 1;
      await sleep(100);
      return { absolute: { maxTotalCores: 10, totalCoresUsed: 2 }, requestId: `req-${gets}` };
    };
    const rounds = await Promise.all(ledgers.map((l) => l.limits(read, undefined)));
    expect(gets).toBe(1);
    expect(rounds.filter((r) => !r.shared)).toHaveLength(1);
    expect(new Set(rounds.map((r) => r.stamp)).size).toBe(1);
    for (const r of rounds) expect(r.absolute).toEqual({ maxTotalCores: 10, totalCoresUsed: 2 });
    await Promise.all(ledgers.map((l) => l.limits(read, undefined)));
    expect(gets).toBe(1);
  });

  it('a failed read frees the refresh lock for the next caller', async () => {
    const projectId = project();
    const [a, b] = [ledger({ projectId, limitsMaxAgeMs: 0 }), ledger({ projectId, limitsMaxAgeMs: 0 })];
    await expect(a.limits(async () => Promise.reject(new Error('nova down')), undefined)).rejects.toThrow('nova down');
    const started = Date.now();
    const r = await b.limits(async () => ({ absolute: { maxTotalCores: 1 }, requestId: 'ok' }), undefined);
    expect(r).toMatchObject({ requestId: 'ok', shared: false, ageMs: 0 });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('freed quota published by one holder wakes the listeners of every holder', async () => {
    const projectId = project();
    const [a, b, c] = [ledger({ projectId }), ledger({ projectId }), ledger({ projectId })];
    const heard: string[] = [];
    a.onFreed(() => heard.push('a'));
    b.onFreed(() => heard.push('b'));
    const off = c.onFreed(() => heard.push('c'));
    off();
    await sleep(200); // subscriptions settle
    await a.publishFreed('server-9');
    const started = Date.now();
    while (heard.length < 2 && Date.now() - started < 5000) await sleep(20);
    expect(heard.sort()).toEqual(['a', 'b']);
  });

  it("onWake: freed quota published by one holder wakes each other holder's oldest place only; that place leaving (or admitted) wakes the next", async () => {
    const projectId = project();
    const [a, b] = [ledger({ projectId }), ledger({ projectId })];
    const [p1, p2, p3] = [await b.join(need(2)), await b.join(need(2)), await b.join(need(2))];
    const heard: string[] = [];
    b.onWake(p1, () => heard.push('p1'));
    b.onWake(p2, () => heard.push('p2'));
    b.onWake(p3, () => heard.push('p3'));
    await sleep(200); // subscriptions settle
    await a.publishFreed('server-1');
    const started = Date.now();
    while (heard.length === 0 && Date.now() - started < 5000) await sleep(20);
    await sleep(100);
    expect(heard).toEqual(['p1']);
    await b.leave(p1);
    expect(heard).toEqual(['p1', 'p2']);
    const admitted = await b.admit({ place: p2, needs: need(2), headroom: { cores: 100 }, stamp: 0, ttlMs: 10_000 });
    expect(admitted.admitted).toBe(true);
    expect(heard).toEqual(['p1', 'p2', 'p3']);
  });

  it('two projects (or two endpoints) never mix', async () => {
    const a = ledger({ projectId: 'alpha' });
    const b = ledger({ projectId: 'beta' });
    const c = ledger({ projectId: 'alpha', endpoint: 'http://other-cloud:8774/v2.1' });
    for (const l of [a, b, c]) {
      const got = await l.admit({ place: undefined, needs: need(4), headroom: { cores: 4 }, stamp: 0, ttlMs: 10_000 });
      expect(got).toMatchObject({ admitted: true, inFlight: { cores: 0 } });
    }
  });

  it("forClient takes the endpoint and project id from a NovaClient (same scope as explicit options)", async () => {
    const nova = new NovaClient({ endpoint: ENDPOINT, token: 'tok', projectId: 'gamma' });
    const viaClient = await RedisQuotaLedger.forClient(nova, { url: server.url });
    afterThisTest(() => viaClient.close());
    const explicit = ledger({ projectId: 'gamma' });
    const got = await viaClient.admit({ place: undefined, needs: need(2), headroom: { cores: 2 }, stamp: 0, ttlMs: 10_000 });
    expect(got.admitted).toBe(true);
    expect(await explicit.admit({ place: undefined, needs: need(1), headroom: { cores: 2 }, stamp: 0, ttlMs: 10_000 })).toMatchObject({ admitted: false, inFlight: { cores: 2 } });
    await expect(RedisQuotaLedger.forClient(new NovaClient({ endpoint: ENDPOINT, token: 'tok' }), { url: server.url })).rejects.toBeInstanceOf(ValidationError);
  });

  it('everReached: false while nothing listens at the URL, true once the connection reached Redis (and after Redis goes away)', async () => {
    const gone = await RedisServer.start();
    const url = gone.url;
    await gone.kill();
    const dead = ledger({ url, commandTimeoutMs: 500 });
    await expect(dead.probe()).rejects.toThrow();
    expect(dead.everReached()).toBe(false);
    const live = ledger();
    await live.probe();
    expect(live.everReached()).toBe(true);
  });

  it('refuses unknown and bad options; never shows a Redis password', async () => {
    expect(() => new RedisQuotaLedger({ url: server.url, endpoint: ENDPOINT, projectId: 'p', limitsMaxAgMs: 5 } as never)).toThrow(/did you mean limitsMaxAgeMs/);
    expect(() => new RedisQuotaLedger({ endpoint: ENDPOINT, projectId: 'p' } as never)).toThrow(ValidationError);
    expect(() => new RedisQuotaLedger({ url: 'http://x', endpoint: ENDPOINT, projectId: 'p' })).toThrow(ValidationError);
    const l = ledger({ url: `redis://nobody:s3cr3t-pw@127.0.0.1:${server.port}`, commandTimeoutMs: 500 });
    expect(inspect(l)).not.toContain('s3cr3t-pw');
    expect(JSON.stringify(l)).not.toContain('s3cr3t-pw');
    // The server has no user "nobody": the AUTH fails; the error must not carry the password either.
    const error = await l.join(need(1)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedisLedgerError);
    expect(inspect(error, { depth: 5 })).not.toContain('s3cr3t-pw');
  });

  it('Redis killed mid-run and restarted empty: the posting claims still held are written back; tokens do not go back', async () => {
    const projectId = project();
    const a = ledger({ projectId, commandTimeoutMs: 1000 });
    const b = ledger({ projectId, commandTimeoutMs: 1000 });
    const got = await a.admit({ place: undefined, needs: need(3), headroom: { cores: 4 }, stamp: 0, ttlMs: 60_000 });
    if (!got.admitted) throw new Error('not admitted');
    // Renewed right before its POST, as the guard does: posting, so the write-back restores it.
    expect(await a.renew(got.claim, 60_000)).toBe(true);
    await server.kill();
    const down = Date.now();
    await expect(a.renew(got.claim, 60_000)).rejects.toBeInstanceOf(RedisLedgerError);
    expect(Date.now() - down).toBeLessThan(5000);
    await server.restart();
    const started = Date.now();
    let live = false;
    while (!live && Date.now() - started < 15_000) {
      live = await a.renew(got.claim, 60_000).catch(() => false);
      if (!live) await sleep(100);
    }
    expect(live).toBe(true);
    let other: Awaited<ReturnType<typeof b.admit>> | undefined;
    while (other === undefined && Date.now() - started < 15_000) other = await b.admit({ place: undefined, needs: need(2), headroom: { cores: 4 }, stamp: 0, ttlMs: 60_000 }).catch(() => undefined);
    expect(other).toMatchObject({ admitted: false, inFlight: { cores: 3 } });
    const next = await b.claimAnyway(need(1), 10_000);
    expect(next.token).toBeGreaterThan(got.claim.token);
  });

  /** The settle key's lease left, ms (-2: not set), read on a connection of its own. */
  async function settlePttl(projectId: string): Promise<number> {
    const r = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      await r.connect();
      return await r.pttl(ledgerKeys('nova-guard:', ENDPOINT, projectId).scope[14]!);
    } finally {
      r.disconnect();
    }
  }

  it('after an empty restart, a holder that came back and wrote back holds every admission for the whole holder lease (placeTtlMs), not one heartbeat, so the holders not back yet can write back theirs', async () => {
    const projectId = project();
    const a = ledger({ projectId, commandTimeoutMs: 1000, placeTtlMs: 3000 });
    const b = ledger({ projectId, commandTimeoutMs: 1000, placeTtlMs: 3000 });
    const got = await a.admit({ place: undefined, needs: need(3), headroom: { cores: 4 }, stamp: 0, ttlMs: 60_000 });
    if (!got.admitted) throw new Error('not admitted');
    // Renewed right before its POST, as the guard does: posting, so the write-back restores it.
    expect(await a.renew(got.claim, 60_000)).toBe(true);
    // The scope has been in use (a confirmed deletion took an order number): the restart loses it.
    await b.publishFreed('s-1');
    await server.restart();
    const started = Date.now();
    let live = false;
    while (!live && Date.now() - started < 15_000) {
      live = await a.renew(got.claim, 60_000).catch(() => false);
      if (!live) await sleep(50);
    }
    expect(live).toBe(true);
    const back = Date.now();
    // The store lost its state (its order counter was gone): settle for placeTtlMs (3000), not 1000.
    const pttl = await settlePttl(projectId);
    expect(pttl).toBeGreaterThan(1000);
    expect(pttl).toBeLessThanOrEqual(3000);
    // 1 core is left (a's claim was written back): it fits, yet nothing is admitted while settling,
    // also past one heartbeat (1000 ms), when the old settle had ended.
    const settling = await b.admit({ place: undefined, needs: need(1), headroom: { cores: 4 }, stamp: 0, ttlMs: 60_000 });
    expect(Date.now() - back).toBeLessThan(900);
    expect(settling).toMatchObject({ admitted: false, inFlight: { cores: 3 } });
    await sleep(1300 - (Date.now() - back));
    const pastOneBeat = await b.admit({ place: undefined, needs: need(1), headroom: { cores: 4 }, stamp: 0, ttlMs: 60_000 });
    if (Date.now() - back < 2700) expect(pastOneBeat).toMatchObject({ admitted: false, inFlight: { cores: 3 } });
    await sleep(3300 - (Date.now() - back));
    expect(await b.admit({ place: undefined, needs: need(1), headroom: { cores: 4 }, stamp: 0, ttlMs: 60_000 })).toMatchObject({ admitted: true });
  });

  it('a holder cut off from a Redis that kept its state writes back with a settle of one heartbeat (placeTtlMs / 3), and never shortens a longer settle', async () => {
    const projectId = project();
    const proxy = await startLatencyProxy(server.port, 0);
    afterThisTest(() => proxy.close());
    const a = ledger({ projectId, url: proxy.url, commandTimeoutMs: 1000, placeTtlMs: 3000 });
    const b = ledger({ projectId, commandTimeoutMs: 1000, placeTtlMs: 3000 });
    const got = await a.admit({ place: undefined, needs: need(3), headroom: { cores: 4 }, stamp: 0, ttlMs: 60_000 });
    if (!got.admitted) throw new Error('not admitted');
    // Renewed right before its POST, as the guard does: posting, so the write-back restores it.
    expect(await a.renew(got.claim, 60_000)).toBe(true);
    // The scope has been in use (a confirmed deletion took an order number): its state is there.
    await b.publishFreed('s-1');
    /** Cut a off, let it reconnect, and wait until it wrote back; answers the settle's lease left then. */
    const cutAndBack = async (): Promise<{ pttl: number; tookMs: number }> => {
      proxy.partition();
      await sleep(300);
      proxy.heal();
      const started = Date.now();
      let live = false;
      while (!live && Date.now() - started < 15_000) {
        live = await a.renew(got.claim, 60_000).catch(() => false);
        if (!live) await sleep(20);
      }
      expect(live).toBe(true);
      return { pttl: await settlePttl(projectId), tookMs: Date.now() - started };
    };
    const first = await cutAndBack();
    expect(first.pttl).toBeGreaterThan(0);
    expect(first.pttl).toBeLessThanOrEqual(1000);
    // The claim is still in the store: b sees it; nothing is admitted while settling.
    expect(await b.admit({ place: undefined, needs: need(1), headroom: { cores: 4 }, stamp: 0, ttlMs: 60_000 })).toMatchObject({ admitted: false, inFlight: { cores: 3 } });
    await sleep(1100);
    expect(await b.admit({ place: undefined, needs: need(1), headroom: { cores: 4 }, stamp: 0, ttlMs: 60_000 })).toMatchObject({ admitted: true });
    // A longer settle (an empty restart's) is set: the ordinary write-back leaves it as it is.
    const r = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await r.connect();
    await r.set(ledgerKeys('nova-guard:', ENDPOINT, projectId).scope[14]!, '1', 'PX', 20_000);
    r.disconnect();
    const second = await cutAndBack();
    expect(second.pttl).toBeGreaterThan(20_000 - second.tookMs - 2000);
  });
});

describe('RedisQuotaLedger with no Redis', () => {
  it('rejects quickly with RedisLedgerError and leaves no unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown): void => void unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    const l = new RedisQuotaLedger({ url: 'redis://127.0.0.1:1', endpoint: ENDPOINT, projectId: 'p', commandTimeoutMs: 300 });
    try {
      const started = Date.now();
      const results = await Promise.allSettled([l.join(need(1)), l.admit({ place: undefined, needs: need(1), headroom: {}, stamp: 0, ttlMs: 1000 }), l.publishFreed('s'), l.limits(async () => ({ absolute: {}, requestId: undefined }), undefined)]);
      expect(Date.now() - started).toBeLessThan(3000);
      for (const r of results) {
        expect(r.status).toBe('rejected');
        if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(RedisLedgerError);
      }
      await sleep(100);
      expect(unhandled).toEqual([]);
    } finally {
      await l.close();
      process.off('unhandledRejection', onUnhandled);
    }
  });
});

