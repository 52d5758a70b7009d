/**
 * Degraded mode across processes (issue 30): worker "hosts" are child processes (fleetWorker.mjs, on
 * the built package) sharing one FakeNova over HTTP and one real redis-server, which is SIGKILLed.
 * Degraded mode costs speed, never jobs: once the ledger has been out of reach longer than any claim
 * of a process can live in it (its last call that may have reached Redis + its longest lease +
 * Redis's placeTtlMs), each process admits within its part of the quota (quota / hosts / processes
 * of its host, hosts as last seen); before that moment it waits, so a short outage over-commits
 * nothing. Real clock, outcomes and generous bounds only.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeNova, type FakeNovaOptions, type FakeServerView } from '../../src/testing/index.js';
import { ensureBuilt, Fleet, live, posts403, sleep, type HostConfig } from './fleetSupport.js';
import { haveRedis, RedisServer, skipReason } from './support.js';

/** The one warning of a process that starts admitting within its share (`degradedLedger.ts`). */
const SHARE_WARNING = /admitting within this process's part of the quota/;

describe.skipIf(!haveRedis)(`degraded mode of a fleet of worker processes${haveRedis ? '' : ` (${skipReason})`}`, () => {
  let redis: RedisServer | undefined;
  let nova: FakeNova | undefined;
  // Short leases so the moment past which no claim can be live comes within seconds: lease 1500 ms,
  // a POST's cover 4000 + the ledger's budget (its measured round trips and refreshes: 1 to several
  // seconds on a loaded machine), Redis's place lease 1000 ms. maxWaitMs leaves room for the moment and
  // for each process's creates one at a time after it.
  const fleet = new Fleet(() => ({
    redisUrl: redis!.url,
    runMs: 100,
    leaseTtlMs: 1500,
    ledgerTimeoutMs: 500,
    commandTimeoutMs: 500,
    placeTtlMs: 1000,
    requestTimeoutMs: 4000,
    limitsMaxAgeMs: 200,
    maxWaitMs: 40_000,
  }));
  beforeAll(() => {
    ensureBuilt();
  }, 120_000);
  afterEach(async () => {
    fleet.killAll();
    await nova?.close();
    nova = undefined;
    await redis?.kill();
    redis = undefined;
  });

  async function startNova(options: FakeNovaOptions): Promise<FakeNova> {
    nova = await FakeNova.start({ maxTotalInstances: -1, maxTotalRAMSize: -1, buildDelayMs: 150, deleteDelayMs: 100, ...options });
    return nova;
  }

  const holderOf = (s: FakeServerView): string | undefined => s.metadata['nova-guard-holder'];

  /** Each server of the fake as sampled every 10 ms: its holder, when it was created and when last seen alive. */
  interface Seen {
    readonly name: string;
    readonly holder: string | undefined;
    readonly createdMs: number;
    lastAliveMs: number;
  }
  function sampler(n: FakeNova): { seen: Map<string, Seen>; stop: () => void } {
    const seen = new Map<string, Seen>();
    const look = (): void => {
      const now = Date.now();
      for (const s of n.listServerStates()) {
        const alive = s.status !== 'DELETED' && s.terminatedMs === null;
        const e = seen.get(s.id);
        if (!e) seen.set(s.id, { name: s.name, holder: holderOf(s), createdMs: s.createdMs, lastAliveMs: alive ? now : s.createdMs });
        else if (alive) e.lastAliveMs = now;
      }
    };
    look();
    const timer = setInterval(look, 10);
    return { seen, stop: () => clearInterval(timer) };
  }

  it('Redis killed for good under 20 processes x 4 jobs: 0 failed jobs, 0 servers left, at most a few quota 403s, no host above its share', async () => {
    redis = await RedisServer.start();
    // 20 hosts (a custom holder name is a host of its own): a part of 2 cores each, one 2-core
    // server; 2 workers per host, so the demand (80 cores) is twice the quota.
    const quota = 40;
    const n = await startNova({ maxTotalCores: quota });
    const holders = Array.from({ length: 20 }, (_, i) => `h${String(i).padStart(2, '0')}`);
    const cfg = (holder: string): HostConfig => ({ holder, workers: 2, jobs: 2 });
    const started = Date.now();
    const { seen, stop } = sampler(n);
    const hs = holders.map((holder) => fleet.host(n, cfg(holder)));
    // Early in the run: once every host has reached Redis and created its first server.
    const deadline = Date.now() + 90_000;
    const created = (): Set<string | undefined> => new Set([...seen.values()].map((s) => s.holder));
    while (!holders.every((h) => created().has(h)) && Date.now() < deadline) await sleep(20);
    expect(holders.filter((h) => !created().has(h))).toEqual([]);
    await redis.kill();
    const killedAt = Date.now();
    const createdBeforeKill = seen.size;
    const results = await Promise.all(hs.map((h) => h.result));
    stop();
    const wallMs = Date.now() - started;

    const failed = results.reduce((s, r) => s + r.failed, 0);
    const done = results.reduce((s, r) => s + r.done, 0);
    const degraded = results.reduce((s, r) => s + (r.stats.degradedAdmissions ?? 0), 0);
    const record = n.quotaRecord();
    // When each process began admitting within its share, after the kill (the moment, as it came).
    const shareFrom = hs.flatMap((h) => h.log.filter((l) => SHARE_WARNING.test(l)).map((l) => (JSON.parse(l) as { time: number }).time - killedAt));
    const firstShareMs = shareFrom.length > 0 ? [Math.min(...shareFrom), Math.max(...shareFrom)] : [];
    const slowestCreateMs = Math.max(...results.flatMap((r) => r.createMs));
    const figures = { createdBeforeKill, firstShareMs, slowestCreateMs, done, failed, posts403: posts403(n), guard403s: results.reduce((s, r) => s + r.stats.quota403s, 0), degraded, peakCores: record.peakCores, quota, afterKillMs: Date.now() - killedAt, wallMs };
    console.log(`Redis killed for good: ${JSON.stringify(figures)}`);
    expect(results.flatMap((r) => r.errors)).toEqual([]);
    expect({ done, failed }).toEqual({ done: 80, failed: 0 });
    expect(live(n)).toEqual([]);
    expect(posts403(n)).toBeLessThanOrEqual(3);
    expect(degraded).toBeGreaterThan(0);
    // Not before the moment: at least the POST's cover (requestTimeoutMs 4000 + the budget, at least
    // ledgerTimeoutMs 500) plus Redis's place lease (1000) after the kill, less a little for the last
    // call that reached Redis (sent just before the kill).
    expect(Math.min(...shareFrom)).toBeGreaterThanOrEqual(5000);

    // No host above its share: from its degraded-mode warning on, each create of a host starts while
    // none of its other servers is alive (its part, 2 cores, holds one 2-core server).
    const servers = [...seen.values()];
    for (const [i, h] of hs.entries()) {
      const holder = holders[i]!;
      const warnings = h.log.filter((l) => SHARE_WARNING.test(l));
      expect(warnings.length, h.log.join('\n')).toBeLessThanOrEqual(1);
      if (warnings.length === 0) continue;
      const from = (JSON.parse(warnings[0]!) as { time: number }).time;
      const mine = servers.filter((s) => s.holder === holder);
      for (const s of mine.filter((x) => x.createdMs >= from)) {
        const alive = mine.filter((o) => o !== s && o.createdMs <= s.createdMs && o.lastAliveMs >= s.createdMs);
        expect(alive.map((o) => o.name), `${holder}: ${s.name} created beside another of its servers`).toEqual([]);
      }
    }
  }, 240_000);

  it('Redis down for about 2 s, then back (restarted empty): no degraded admission, never more cores in use than the quota, every job done', async () => {
    redis = await RedisServer.start();
    const quota = 8;
    const n = await startNova({ maxTotalCores: quota });
    const holders = ['a', 'b', 'c', 'd', 'e', 'f'];
    const hs = holders.map((holder) => fleet.host(n, { holder, workers: 2, jobs: 3 }));
    // Once the churn is well under way (a server of every host), while no host is done.
    const { seen, stop } = sampler(n);
    const deadline = Date.now() + 60_000;
    const created = (): Set<string | undefined> => new Set([...seen.values()].map((s) => s.holder));
    while (!holders.every((h) => created().has(h)) && Date.now() < deadline) await sleep(20);
    stop();
    await redis.kill();
    await sleep(2000);
    await redis.restart();
    const results = await Promise.all(hs.map((h) => h.result));
    const figures = {
      done: results.reduce((s, r) => s + r.done, 0),
      failed: results.reduce((s, r) => s + r.failed, 0),
      posts403: posts403(n),
      degraded: results.reduce((s, r) => s + (r.stats.degradedAdmissions ?? 0), 0),
      peakCores: n.quotaRecord().peakCores,
      quota,
    };
    console.log(`Redis down 2 s: ${JSON.stringify(figures)}`);
    expect(results.flatMap((r) => r.errors)).toEqual([]);
    expect(figures).toMatchObject({ done: 36, failed: 0, degraded: 0 });
    // The fake's record of every server that existed, no sampling: 0 over-commit.
    expect(figures.peakCores).toBeLessThanOrEqual(quota);
    expect(live(n)).toEqual([]);
  }, 120_000);
});
