/**
 * The fleet ledger across processes: worker "hosts" are child processes (test/redis/fleetWorker.mjs,
 * on the built package) sharing one FakeNova over HTTP and one real redis-server. Real clock,
 * outcomes and generous bounds only.
 */
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeNova, type FakeNovaOptions } from '../../src/testing/index.js';
import { ledgerKeys } from '../../src/redis/options.js';
import { ensureBuilt, Fleet, live, posts403, sleep, type Host, type HostConfig } from './fleetSupport.js';
import { haveRedis, RedisServer, skipReason } from './support.js';

// One warning per host that says the creates go on without the shared ledger: for a ledger never
// reached, that it waits, then admits with the in-process ledger (src/guard/degradedWords.ts).
const FALLBACK = /then admit with the in-process ledger/;

describe.skipIf(!haveRedis)(`fleet of worker processes on one Redis${haveRedis ? '' : ` (${skipReason})`}`, () => {
  let redis: RedisServer;
  let nova: FakeNova | undefined;
  const fleet = new Fleet(() => ({ redisUrl: redis.url, runMs: 100, leaseTtlMs: 3000, ledgerTimeoutMs: 1000, commandTimeoutMs: 1000, limitsMaxAgeMs: 200 }));
  beforeAll(async () => {
    ensureBuilt();
    redis = await RedisServer.start();
  }, 120_000);
  afterAll(async () => {
    await redis?.kill();
  });
  afterEach(async () => {
    fleet.killAll();
    await nova?.close();
    nova = undefined;
  });

  async function startNova(options: FakeNovaOptions): Promise<FakeNova> {
    nova = await FakeNova.start({ maxTotalInstances: -1, maxTotalRAMSize: -1, buildDelayMs: 150, deleteDelayMs: 100, ...options });
    return nova;
  }

  const host = (n: FakeNova, cfg: HostConfig): Host => fleet.host(n, cfg);

  it('three hosts x two workers under a quota below demand: every job runs, no quota 403, never over the quota', async () => {
    const n = await startNova({ maxTotalCores: 6 });
    const results = await Promise.all(['a', 'b', 'c'].map((holder) => host(n, { holder, workers: 2, jobs: 3 }).result));
    for (const r of results) expect(r, JSON.stringify(r.errors)).toMatchObject({ done: 6, failed: 0 });
    expect(posts403(n)).toBe(0);
    expect(results.reduce((s, r) => s + r.stats.quota403s, 0)).toBe(0);
    // The most cores held at once by servers that existed (the fake's record, no sampling).
    const peak = n.quotaRecord().peakCores;
    expect(peak).toBeLessThanOrEqual(6);
    expect(peak).toBeGreaterThanOrEqual(4); // the quota was really shared, not one create at a time
    expect(live(n)).toEqual([]);
  }, 30_000);

  it('a host killed with SIGKILL while holding a claim: the claim expires, the others finish, only its tagged servers are left', async () => {
    // Servers stay `scheduling` (their claims bound and held) for 600 ms of the build: a window the
    // poll below cannot miss (with 0 ms the claim ended at the first look, a race the poll could lose).
    const n = await startNova({ maxTotalCores: 8, buildDelayMs: 800, schedulingDelayMs: 600 });
    const leaseTtlMs = 1500;
    const keys = ledgerKeys('nova-guard:', n.endpoint, n.projectId);
    const [claimsKey, expKey] = keys.scope as [string, string];
    const r = new Redis(redis.url);
    try {
      const victim = host(n, { holder: 'victim', workers: 2, jobs: 2, leaseTtlMs });
      const others = ['a', 'b'].map((holder) => host(n, { holder, workers: 2, jobs: 2, leaseTtlMs }));
      // Wait until the victim holds a claim whose create Nova answered (a server in BUILD).
      let held: Array<[string, string[]]> = [];
      const deadline = Date.now() + 15_000;
      while (held.length === 0 && Date.now() < deadline) {
        const all = await r.hgetall(claimsKey);
        held = Object.entries(all)
          .map(([id, rec]): [string, string[]] => [id, rec.split(',')])
          .filter(([, f]) => f[4] === 'victim' && f[5] !== '');
        if (held.length === 0) await sleep(10);
      }
      expect(held.length).toBeGreaterThan(0);
      victim.child.kill('SIGKILL');
      await expect(victim.result).rejects.toThrow(/SIGKILL/);
      const killedAt = Date.now();

      const results = await Promise.all(others.map((h) => h.result));
      for (const res of results) expect(res, JSON.stringify(res.errors)).toMatchObject({ done: 4, failed: 0 });

      // The lease ran out on Redis's clock: no live claim of the victim is left.
      await sleep(Math.max(0, killedAt + leaseTtlMs + 200 - Date.now()));
      const [sec, usec] = await r.time();
      const now = Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
      for (const [id] of held) {
        const exp = await r.zscore(expKey, id);
        expect(exp === null || Number(exp) <= now).toBe(true);
      }

      // Left behind: only what the victim created, each tagged with its claim, token and holder.
      const left = live(n);
      expect(left.length).toBeGreaterThan(0);
      for (const s of left) {
        expect(s.metadata['nova-guard-holder']).toBe('victim');
        expect(s.metadata['nova-guard-claim-id']).toMatch(/\S/);
        expect(Number(s.metadata['nova-guard-token'])).toBeGreaterThan(0);
      }
      const boundIds = held.map(([, f]) => f[5]);
      expect(left.map((s) => s.id)).toEqual(expect.arrayContaining(boundIds));
    } finally {
      r.disconnect();
    }
  }, 40_000);

  // An empty restart holds every admission for placeTtlMs (15 s): 23 s for this case on a loaded machine.
  it('Redis restarted empty during a churn: no failed job, no leaked server', async () => {
    const n = await startNova({ maxTotalCores: 6 });
    const hs = ['a', 'b', 'c'].map((holder) => host(n, { holder, workers: 2, jobs: 3, commandTimeoutMs: 500, ledgerTimeoutMs: 500 }));
    let finished = 0;
    for (const h of hs) void h.result.then(() => finished++, () => undefined);
    // Restart once the churn is well under way (some servers created), while no host is done.
    const deadline = Date.now() + 10_000;
    while (n.requests.filter((q) => q.method === 'POST').length < 4 && Date.now() < deadline) await sleep(10);
    await redis.restart();
    expect(finished).toBe(0);
    const results = await Promise.all(hs.map((h) => h.result));
    for (const res of results) expect(res, JSON.stringify(res.errors)).toMatchObject({ done: 6, failed: 0 });
    expect(live(n)).toEqual([]);
  }, 60_000);

  it('Redis absent from the start: the guard falls back, says so once per host, every job completes', async () => {
    const gone = await RedisServer.start();
    const url = gone.url;
    await gone.kill();
    const n = await startNova({ maxTotalCores: 6 });
    const hs = ['a', 'b'].map((holder) => host(n, { holder, workers: 2, jobs: 2, redisUrl: url, commandTimeoutMs: 300, ledgerTimeoutMs: 300 }));
    const results = await Promise.all(hs.map((h) => h.result));
    for (const [i, res] of results.entries()) {
      expect(res, JSON.stringify(res.errors)).toMatchObject({ done: 4, failed: 0 });
      expect(res.stats.ledgerFallbacks).toBeGreaterThan(0);
      const log = hs[i]!.log;
      expect(log.filter((l) => FALLBACK.test(l)), log.join('\n')).toHaveLength(1);
      // Without the shared ledger the hosts may race and meet Nova's quota 403s, which the guard logs
      // (warn) as it retries them: timing-dependent, so not counted. Nothing else warns.
      const warnings = log.filter((l) => (JSON.parse(l) as { level: number }).level >= 40 && !/quota error .*retrying/.test((JSON.parse(l) as { msg: string }).msg));
      expect(warnings, log.join('\n')).toHaveLength(1);
    }
    expect(live(n)).toEqual([]);
  }, 40_000);
});
