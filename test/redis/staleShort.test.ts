/**
 * The Redis ledger's kept reading for a "still short" answer (`AcquireRequest.staleShortMs`): a
 * kept reading older than `limitsMaxAgeMs` but within `staleShortMs`, sent after the last confirmed
 * deletion, that leaves the needs short answers "not admitted" with no `/limits` read; a reading
 * that would admit, one a confirmed deletion came after, and one older than `staleShortMs` are read
 * afresh. Real redis-server; real clock with generous bounds.
 */
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { RedisQuotaLedger } from '../../src/redis/index.js';
import { ledgerKeys } from '../../src/redis/options.js';
import type { AcquireRequest, LimitsReading } from '../../src/guard/index.js';
import { afterThisTest } from '../cleanup.js';
import { haveRedis, skipReason, useRedisServer } from './support.js';

const ENDPOINT = 'http://nova.example:8774/v2.1';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const two = { cores: 2, ramMiB: 0, instances: 1 };
const ask = (over: Partial<AcquireRequest> = {}): AcquireRequest => ({ place: undefined, needs: two, ttlMs: 60_000, joinIfShort: false, ...over });

/** A `/limits` read of `absolute()` that counts its calls. */
function reader(absolute: () => Record<string, number>): { read: (signal: AbortSignal | undefined) => Promise<LimitsReading>; calls: () => number } {
  let n = 0;
  return {
    read: async () => {
      n += 1;
      return { absolute: absolute(), requestId: `req-${n}` };
    },
    calls: () => n,
  };
}

describe.skipIf(!haveRedis)(`RedisQuotaLedger: a kept reading that still says short${haveRedis ? '' : ` (${skipReason})`}`, () => {
  const server = useRedisServer();
  let n = 0;
  function ledger(): RedisQuotaLedger {
    n += 1;
    const l = new RedisQuotaLedger({ url: server.url, endpoint: ENDPOINT, projectId: `stale${n}`, holder: `h${n}`, limitsMaxAgeMs: 200 });
    afterThisTest(() => l.close());
    return l;
  }

  it('short on a reading past limitsMaxAgeMs but within staleShortMs: no read, the reading shared with its age; without staleShortMs: a read', async () => {
    const l = ledger();
    const nova = reader(() => ({ maxTotalCores: 2, totalCoresUsed: 2 }));
    expect(await l.acquire(ask(), nova.read, undefined)).toMatchObject({ admitted: false });
    expect(nova.calls()).toBe(1);
    await sleep(400);
    const short = await l.acquire(ask({ staleShortMs: 10_000, joinIfShort: true }), nova.read, undefined);
    expect(short).toMatchObject({ admitted: false, reading: { shared: true, requestId: 'req-1' } });
    expect(short.reading.ageMs).toBeGreaterThanOrEqual(350);
    // Joined the queue on the way, as a short answer on a fresh reading does.
    expect(short.place).toBeDefined();
    expect(nova.calls()).toBe(1);
    expect(await l.acquire(ask({ place: short.place }), nova.read, undefined)).toMatchObject({ admitted: false, reading: { shared: false } });
    expect(nova.calls()).toBe(2);
  });

  it('a reading that would admit is never admitted on once past limitsMaxAgeMs: read afresh, and the fresh one decides', async () => {
    const l = ledger();
    let used = 0;
    const nova = reader(() => ({ maxTotalCores: 2, totalCoresUsed: used }));
    const first = await l.acquire(ask(), nova.read, undefined);
    expect(first.admitted).toBe(true);
    if (first.admitted) await l.release(first.claim, 'not-created');
    // Meanwhile someone outside the ledger took the cores: only a fresh reading knows.
    used = 2;
    await sleep(400);
    const again = await l.acquire(ask({ staleShortMs: 10_000 }), nova.read, undefined);
    expect(nova.calls()).toBe(2);
    expect(again).toMatchObject({ admitted: false, reading: { shared: false, requestId: 'req-2' } });
  });

  it('a deletion confirmed after the reading, or a reading older than staleShortMs, is read afresh', async () => {
    const l = ledger();
    const nova = reader(() => ({ maxTotalCores: 2, totalCoresUsed: 2 }));
    await l.acquire(ask(), nova.read, undefined);
    await sleep(400);
    await l.publishFreed('0b0e6f4a-3d7c-4d55-9d3e-2f6f1c9a7b11');
    await l.acquire(ask({ staleShortMs: 10_000 }), nova.read, undefined);
    expect(nova.calls()).toBe(2);
    await sleep(700);
    await l.acquire(ask({ staleShortMs: 500 }), nova.read, undefined);
    expect(nova.calls()).toBe(3);
    // Within both: no read.
    await sleep(300);
    await l.acquire(ask({ staleShortMs: 10_000 }), nova.read, undefined);
    expect(nova.calls()).toBe(3);
  });

  describe("the admission order of a late 'counted' claim", () => {
    const three = { cores: 3, ramMiB: 0, instances: 1 };
    /** A ledger that keeps its reading for the whole test, its keys, and an admin client. */
    async function scope(): Promise<{ l: RedisQuotaLedger; keys: readonly string[]; limits: string; r: Redis }> {
      n += 1;
      const projectId = `order${n}`;
      const l = new RedisQuotaLedger({ url: server.url, endpoint: ENDPOINT, projectId, holder: `h${n}`, limitsMaxAgeMs: 600_000 });
      afterThisTest(() => l.close());
      const r = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
      await r.connect();
      afterThisTest(() => r.disconnect());
      const k = ledgerKeys('nova-guard:', ENDPOINT, projectId);
      return { l, keys: k.scope, limits: k.limits, r };
    }
    /** A reading kept (4 cores left), then a claim of 2 admitted on it, bound and released 'counted'. */
    async function lateClaim(l: RedisQuotaLedger, nova: ReturnType<typeof reader>): Promise<{ stamp: number; claimId: string }> {
      const first = await l.acquire(ask(), nova.read, undefined);
      if (first.admitted) await l.release(first.claim, 'not-created');
      const late = await l.acquire(ask(), nova.read, undefined);
      expect(late).toMatchObject({ admitted: true, reading: { shared: true } });
      if (!late.admitted) throw new Error('expected an admission');
      await l.bind(late.claim, 'srv-late');
      await l.release(late.claim, 'counted');
      return { stamp: first.reading.stamp, claimId: late.claim.id };
    }

    it('is kept through bind and release: short only by a claim admitted after the kept reading was stored, no read', async () => {
      const { l, keys, limits, r } = await scope();
      const nova = reader(() => ({ maxTotalCores: 4, totalCoresUsed: 0 }));
      const first = await l.acquire(ask(), nova.read, undefined);
      if (first.admitted) await l.release(first.claim, 'not-created');
      const late = await l.acquire(ask(), nova.read, undefined);
      if (!late.admitted) throw new Error('expected an admission');
      await l.bind(late.claim, 'srv-late');
      const record = (await r.hget(keys[0]!, late.claim.id))!.split(',');
      expect(record.slice(3, 6)).toEqual([String(late.claim.token), 'h' + String(n), 'srv-late']);
      await l.release(late.claim, 'counted');
      const counted = (await r.hget(keys[3]!, late.claim.id))!.split(',');
      const [storedOrd, storedFor] = await r.hmget(limits, 'storedOrd', 'storedFor');
      expect(Number(storedFor)).toBe(first.reading.stamp);
      expect(Number(storedOrd)).toBeGreaterThan(first.reading.stamp);
      // the admission order (7th field of the record, 4th of the counted needs) is at or after the store
      expect(counted.slice(0, 3)).toEqual(['2', '0', '1']);
      expect(counted[3]).toBe(record[6]);
      expect(Number(counted[3])).toBeGreaterThanOrEqual(Number(storedOrd));
      const short = await l.acquire(ask({ needs: three }), nova.read, undefined);
      expect(short).toMatchObject({ admitted: false, reading: { shared: true, requestId: 'req-1' }, inFlight: { cores: 2 } });
      expect(nova.calls()).toBe(1);
    });

    it('written by an older nova-guard (a counted record without it, or a kept reading without its stored order): the kept reading may count the claim, read again', async () => {
      for (const older of ['claim', 'reading'] as const) {
        const { l, keys, limits, r } = await scope();
        const nova = reader(() => ({ maxTotalCores: 4, totalCoresUsed: 0 }));
        const { claimId } = await lateClaim(l, nova);
        expect(nova.calls()).toBe(1);
        if (older === 'claim') await r.hset(keys[3]!, claimId, '2,0,1');
        else await r.hdel(limits, 'storedOrd', 'storedFor');
        const again = await l.acquire(ask({ needs: three }), nova.read, undefined);
        expect(nova.calls(), older).toBe(2);
        expect(again.reading.shared).toBe(false);
      }
    });
  });
});
