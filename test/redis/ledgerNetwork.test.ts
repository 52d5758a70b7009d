/**
 * The Redis ledger under a real network (issue 19): one round trip per admission on a fresh kept
 * reading, admissions through a far Redis (a latency proxy) within the ledger's measured budget and
 * never over the quota, kept readings that a clock step cannot make fresh, a Redis that cannot be
 * reached known at once (`ledgerDown`), `probe`, the live holders of a scope, and cleanup racing
 * `close()` kept quiet. Real redis-server processes; real clock with generous bounds.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisLedgerError, RedisQuotaLedger } from '../../src/redis/index.js';
import type { RedisQuotaLedgerOptions } from '../../src/redis/index.js';
import { ledgerKeys } from '../../src/redis/options.js';
import { isLedgerDown, QuotaGuard, type AcquireRequest, type LimitsReading } from '../../src/guard/index.js';
import { startLatencyProxy } from '../../bench/latencyProxy.js';
import { afterThisTest } from '../cleanup.js';
import { FAST, body, clientFor, startNova } from '../guard/fixtures.js';
import { haveRedis, RedisServer, skipReason } from './support.js';

const ENDPOINT = 'http://nova.example:8774/v2.1';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const one = { cores: 1, ramMiB: 0, instances: 1 };

/** A `/limits` read that counts its calls. */
function reader(absolute: Record<string, number>): { read: (signal: AbortSignal | undefined) => Promise<LimitsReading>; calls: () => number } {
  let n = 0;
  return {
    read: async () => {
      n += 1;
      return { absolute, requestId: `req-${n}` };
    },
    calls: () => n,
  };
}

const ask = (over: Partial<AcquireRequest> = {}): AcquireRequest => ({ place: undefined, needs: one, ttlMs: 60_000, joinIfShort: false, ...over });

describe.skipIf(!haveRedis)(`RedisQuotaLedger under a real network${haveRedis ? '' : ` (${skipReason})`}`, () => {
  let server: RedisServer;
  let admin: Redis;
  let n = 0;
  beforeAll(async () => {
    server = await RedisServer.start();
    admin = new Redis(server.url);
  });
  afterAll(async () => {
    await admin?.quit();
    await server?.kill();
  });

  function project(): string {
    n += 1;
    return `net${n}`;
  }
  function ledger(extra: Partial<RedisQuotaLedgerOptions> = {}): RedisQuotaLedger {
    const l = new RedisQuotaLedger({ url: server.url, endpoint: ENDPOINT, projectId: 'unset', holder: `h${Math.random().toString(36).slice(2, 8)}`, ...extra });
    afterThisTest(() => l.close());
    return l;
  }
  async function scriptCalls(): Promise<number> {
    const info = await admin.info('commandstats');
    let total = 0;
    for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) total += Number(m[1]);
    return total;
  }
  async function redisNowMs(): Promise<number> {
    const [s, us] = await admin.time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  }

  it('acquire with a fresh kept reading is ONE script call: reading, check and claim together', async () => {
    const projectId = project();
    const l = ledger({ projectId, limitsMaxAgeMs: 60_000 });
    const nova = reader({ maxTotalCores: 8, totalCoresUsed: 2 });
    // The first acquire reads /limits (two scripts around the read) and loads the scripts.
    const first = await l.acquire(ask(), nova.read, undefined);
    expect(first).toMatchObject({ admitted: true, reading: { shared: false, absolute: { maxTotalCores: 8 } } });
    await admin.config('RESETSTAT');
    const second = await l.acquire(ask(), nova.read, undefined);
    expect(await scriptCalls()).toBe(1);
    expect(nova.calls()).toBe(1);
    expect(second).toMatchObject({ admitted: true, inFlight: { cores: 1 }, reading: { shared: true, requestId: 'req-1', stamp: first.reading.stamp } });
  });

  it('acquire subtracts claims and places ahead as admit does, and joins the queue when short and asked to', async () => {
    const projectId = project();
    const [a, b] = [ledger({ projectId, limitsMaxAgeMs: 60_000 }), ledger({ projectId, limitsMaxAgeMs: 60_000 })];
    const nova = reader({ maxTotalCores: 4, totalCoresUsed: 1, maxTotalInstances: -1, totalInstancesUsed: 3 });
    const got = await a.acquire(ask({ needs: { cores: 2, ramMiB: 0, instances: 1 } }), nova.read, undefined);
    expect(got.admitted).toBe(true);
    const short = await b.acquire(ask({ needs: { cores: 2, ramMiB: 0, instances: 1 }, joinIfShort: true }), nova.read, undefined);
    expect(short).toMatchObject({ admitted: false, inFlight: { cores: 2 }, ahead: { cores: 0 } });
    expect(short.place).toBeDefined();
    // The place taken is queued ahead of a newcomer without one.
    const newcomer = await a.acquire(ask(), nova.read, undefined);
    expect(newcomer).toMatchObject({ admitted: false, ahead: { cores: 2 } });
    if (got.admitted) await a.release(got.claim, 'not-created');
    const turn = await b.acquire(ask({ place: short.place, needs: { cores: 2, ramMiB: 0, instances: 1 } }), nova.read, undefined);
    expect(turn).toMatchObject({ admitted: true, ahead: { cores: 0 } });
    expect(nova.calls()).toBe(1);
  });

  it('a refresh lock that expired while Nova answered gives no admission on that reading: the newer reading of the holder that took the lock decides', async () => {
    const projectId = project();
    const a = ledger({ projectId, limitsMaxAgeMs: 60_000, limitsLockMs: 100 });
    const b = ledger({ projectId, limitsMaxAgeMs: 60_000, limitsLockMs: 100 });
    let aReads = 0;
    const slowRoom = async (): Promise<LimitsReading> => {
      aReads += 1;
      await sleep(400);
      return { absolute: { maxTotalCores: 8, totalCoresUsed: 0 }, requestId: 'a-slow' };
    };
    const full = reader({ maxTotalCores: 8, totalCoresUsed: 8 });
    const slow = a.acquire(ask(), slowRoom, undefined);
    await sleep(200);
    // A's lock has expired: B takes it, reads (full) and keeps the newer reading.
    const byB = await b.acquire(ask(), full.read, undefined);
    expect(byB).toMatchObject({ admitted: false, reading: { shared: false, requestId: 'req-1' } });
    const byA = await slow;
    expect(byA).toMatchObject({ admitted: false, reading: { requestId: 'req-1', shared: true } });
    expect(aReads).toBe(1);
  });

  it('behind 200 ms and 400 ms of round trip, 20 concurrent acquires finish within the ledger budget and never over the quota', async () => {
    for (const rttMs of [200, 400]) {
      const proxy = await startLatencyProxy(server.port, rttMs);
      afterThisTest(() => proxy.close());
      const projectId = project();
      const ledgers = Array.from({ length: 5 }, () => ledger({ projectId, url: proxy.url, limitsMaxAgeMs: 5000, commandTimeoutMs: 4 * rttMs + 1000 }));
      await Promise.all(ledgers.map((l) => l.probe()));
      const nova = reader({ maxTotalCores: 8, totalCoresUsed: 0 });
      const results = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const l = ledgers[i % ledgers.length]!;
          const started = Date.now();
          const r = await l.acquire(ask(), nova.read, undefined);
          return { r, ms: Date.now() - started, budget: Math.max(2000, l.callBudgetMs() ?? 0) };
        }),
      );
      const held = results.filter((x) => x.r.admitted).length;
      expect(held).toBeLessThanOrEqual(8);
      expect(held).toBeGreaterThan(0);
      for (const x of results) expect(x.ms).toBeLessThanOrEqual(x.budget);
      expect(nova.calls()).toBe(1);
      // The budget follows the measured round trip (4 RTO), never below it.
      for (const l of ledgers) expect(l.callBudgetMs()).toBeGreaterThanOrEqual(4 * rttMs * 0.9);
    }
  });

  it('one admission on a fresh reading behind a 200 ms round trip takes less than two round trips', async () => {
    const proxy = await startLatencyProxy(server.port, 200);
    afterThisTest(() => proxy.close());
    const l = ledger({ projectId: project(), url: proxy.url, limitsMaxAgeMs: 60_000 });
    const nova = reader({ maxTotalCores: 100, totalCoresUsed: 0 });
    await l.acquire(ask(), nova.read, undefined);
    const started = Date.now();
    const r = await l.acquire(ask(), nova.read, undefined);
    expect(Date.now() - started).toBeLessThan(400);
    expect(r).toMatchObject({ admitted: true, reading: { shared: true } });
  });

  it('a kept reading stamped 30 s ahead of Redis (its clock stepped back) is refreshed, not handed out', async () => {
    const projectId = project();
    const l = ledger({ projectId, limitsMaxAgeMs: 60_000 });
    const keys = ledgerKeys('nova-guard:', ENDPOINT, projectId);
    const ahead = (await redisNowMs()) + 30_000;
    const json = JSON.stringify({ absolute: { maxTotalCores: 8, totalCoresUsed: 0 }, requestId: 'from-the-future' });
    await admin.hset(keys.limits, { json, stamp: ahead, sentAt: ahead, seq: 1 });
    const nova = reader({ maxTotalCores: 8, totalCoresUsed: 8 });
    const r = await l.limits(nova.read, undefined);
    expect(r).toMatchObject({ shared: false, requestId: 'req-1', absolute: { totalCoresUsed: 8 } });
    expect(nova.calls()).toBe(1);
    await admin.hset(keys.limits, { json, stamp: ahead, sentAt: ahead, seq: 1e15 });
    const viaAcquire = await l.acquire(ask(), nova.read, undefined);
    expect(viaAcquire).toMatchObject({ admitted: false, reading: { shared: false, requestId: 'req-2' } });
  });

  it("a reading Redis's clock keeps calling fresh is refreshed once the holder's own clock has seen it for limitsMaxAgeMs", async () => {
    const projectId = project();
    const l = ledger({ projectId, limitsMaxAgeMs: 300 });
    const keys = ledgerKeys('nova-guard:', ENDPOINT, projectId);
    const nova = reader({ maxTotalCores: 8, totalCoresUsed: 0 });
    const first = await l.limits(nova.read, undefined);
    await sleep(450);
    // Redis's clock stepped back by the reading's age: by Redis's clock it was sent just now.
    const now = await redisNowMs();
    await admin.hset(keys.limits, { stamp: now, sentAt: now });
    const again = await l.limits(nova.read, undefined);
    expect(again).toMatchObject({ shared: false, requestId: 'req-2' });
    expect(again.stamp).toBeGreaterThan(first.stamp);
  });

  it("a claim released as 'counted' after a reading was sent stays subtracted from it even when Redis's clock stepped back between them", async () => {
    const projectId = project();
    const [a, b] = [ledger({ projectId, limitsMaxAgeMs: 0 }), ledger({ projectId, limitsMaxAgeMs: 0 })];
    const claim = await a.claimAnyway({ cores: 3, ramMiB: 0, instances: 1 }, 60_000);
    const reading = await b.limits(async () => ({ absolute: { maxTotalCores: 4, totalCoresUsed: 0 }, requestId: 'r' }), undefined);
    await a.release(claim, 'counted');
    const keys = ledgerKeys('nova-guard:', ENDPOINT, projectId);
    // What a step back of 30 s makes of every release time the ledger records (a Redis-ms score
    // within a few seconds of now): 30 s earlier, before the reading's send time.
    const now = await redisNowMs();
    for (const key of keys.scope.filter((k) => /:counted(at)?$/.test(k))) {
      const score = Number(await admin.zscore(key, claim.id));
      if (Math.abs(score - now) < 5000) await admin.zadd(key, score - 30_000, claim.id);
    }
    expect(await b.inFlight(reading.stamp)).toMatchObject({ cores: 3 });
    const r = await b.admit({ place: undefined, needs: { cores: 2, ramMiB: 0, instances: 1 }, headroom: { cores: 4 }, stamp: reading.stamp, ttlMs: 10_000 });
    expect(r).toMatchObject({ admitted: false, inFlight: { cores: 3 } });
  });

  it('a wrong password rejects with ledgerDown within a few ms, not after commandTimeoutMs, and never shows the password', async () => {
    const l = ledger({ projectId: project(), url: `redis://nobody:s3cr3t-pw@127.0.0.1:${server.port}`, commandTimeoutMs: 5000 });
    const started = Date.now();
    const e = await l.join(one).catch((x: unknown) => x);
    expect(Date.now() - started).toBeLessThan(1500);
    expect(e).toBeInstanceOf(RedisLedgerError);
    expect(isLedgerDown(e)).toBe(true);
    expect((e as RedisLedgerError).downCode).toBe('WRONGPASS');
    expect(String((e as Error).message)).not.toContain('s3cr3t-pw');
    const again = Date.now();
    const e2 = await l.admit({ place: undefined, needs: one, headroom: {}, stamp: 0, ttlMs: 1000 }).catch((x: unknown) => x);
    expect(isLedgerDown(e2)).toBe(true);
    expect(Date.now() - again).toBeLessThan(500);
    await expect(l.probe()).rejects.toSatisfy(isLedgerDown);
  });

  it('a refused connection rejects with ledgerDown at once; probe answers once Redis is there', async () => {
    const refused = ledger({ projectId: project(), url: 'redis://127.0.0.1:1', commandTimeoutMs: 5000 });
    const started = Date.now();
    const e = await refused.acquire(ask(), reader({}).read, undefined).catch((x: unknown) => x);
    expect(Date.now() - started).toBeLessThan(1500);
    expect(isLedgerDown(e)).toBe(true);
    expect((e as RedisLedgerError).downCode).toBe('ECONNREFUSED');
    const t = Date.now();
    await expect(refused.probe()).rejects.toSatisfy(isLedgerDown);
    expect(Date.now() - t).toBeLessThan(500);
    const live = ledger({ projectId: project() });
    await expect(live.probe()).resolves.toBeUndefined();
  });

  it('every admission says how many holders share the scope: 3 ledgers, then 2 after one closes; members() names them', async () => {
    const projectId = project();
    const [a, b, c] = [ledger({ projectId, holder: 'host-a:11' }), ledger({ projectId, holder: 'host-b:12' }), ledger({ projectId, holder: 'runner 3' })];
    expect(a.members()).toEqual([]);
    const room = { place: undefined, needs: one, headroom: { cores: 100 }, stamp: 0, ttlMs: 10_000 };
    await a.admit(room);
    await b.admit(room);
    expect((await c.admit(room)).holders).toBe(3);
    expect([...c.members()].sort()).toEqual(['host-a:11', 'host-b:12', 'runner 3']);
    await b.close();
    expect((await a.admit(room)).holders).toBe(2);
    expect([...a.members()].sort()).toEqual(['host-a:11', 'runner 3']);
    const viaAcquire = await c.acquire(ask(), reader({ maxTotalCores: 100, totalCoresUsed: 0 }).read, undefined);
    expect(viaAcquire.holders).toBe(2);
  });

  it('cleanup racing close() resolves quietly: publishFreed, release and leave after (or cut off by) close()', async () => {
    const l = ledger({ projectId: project() });
    const place = await l.join(one);
    const claim = await l.claimAnyway(one, 60_000);
    const racing = [l.publishFreed('server-1'), l.release(claim, 'counted')];
    await l.close();
    await expect(Promise.all(racing)).resolves.toBeDefined();
    await expect(l.publishFreed('server-2')).resolves.toBeUndefined();
    await expect(l.leave(place)).resolves.toBeUndefined();
    await expect(l.release(claim, 'not-created')).resolves.toBeUndefined();
    await expect(l.bind(claim, 'server-3')).resolves.toBeUndefined();
  });

  it('a guard whose Redis ledger is closed right after a confirmed delete counts no fallback and logs no ledger failure', async () => {
    const nova = await startNova({ projectId: 'noise' });
    const warnings: string[] = [];
    const logger = { info: () => {}, debug: () => {}, error: (m: string) => warnings.push(m), warn: (m: string) => warnings.push(m) };
    const l = new RedisQuotaLedger({ url: server.url, endpoint: nova.endpoint, projectId: 'noise' });
    const client = clientFor(nova);
    const guard = new QuotaGuard(client, { ...FAST, ledger: l, logger });
    const created = await guard.createServer(body('n-1'));
    // The ledger is closed while the delete is on its way: its confirmation comes after close().
    const deleted = client.deleteServer(created.id, { wait: true });
    await l.close();
    await deleted;
    await sleep(200);
    expect(guard.stats.ledgerFallbacks).toBe(0);
    expect(warnings.filter((w) => /quota ledger \(redis\) failed/.test(w))).toEqual([]);
    await guard.close();
  });

  it('a far Redis (round trip above a quarter of commandTimeoutMs) is said once in the log; the option is left as given', async () => {
    const proxy = await startLatencyProxy(server.port, 200);
    afterThisTest(() => proxy.close());
    const lines: Array<{ msg: string; fields: unknown }> = [];
    const logger = { info: () => {}, debug: () => {}, error: () => {}, warn: (msg: string, fields: unknown) => lines.push({ msg, fields }) };
    const l = ledger({ projectId: project(), url: proxy.url, commandTimeoutMs: 700, logger: logger as never });
    for (let i = 0; i < 5; i++) await l.probe();
    const said = lines.filter((x) => /quarter of commandTimeoutMs/.test(x.msg));
    expect(said).toHaveLength(1);
    expect(said[0]!.fields).toMatchObject({ commandTimeoutMs: 700 });
  });
});
