/**
 * The credit of a confirmed deletion to the Redis ledger's kept `/limits` reading
 * (`publishFreed(serverId, { claimId, keptSeq })`, `keptSeen()`; `docs/fleet-ledger.md`, "The credit
 * of a confirmed deletion"): a credit that holds lowers the kept reading's usage by the claim's needs
 * and the next admission needs no `/limits` read; a credit that does not hold makes the kept reading
 * stale, as a deletion without credit does (a read). `limitsMaxAgeMs` is generous (60 s): freshness is
 * decided by the confirmed deletions only. Real redis-server; real clock with generous bounds.
 */
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { RedisQuotaLedger } from '../../src/redis/index.js';
import { ledgerKeys } from '../../src/redis/options.js';
import { ValidationError } from '../../src/errors/index.js';
import type { AcquireRequest, LedgerClaim, LimitsReading } from '../../src/guard/index.js';
import type { ResourceAmounts } from '../../src/core/types.js';
import { afterThisTest } from '../cleanup.js';
import { haveRedis, skipReason, until, useRedisServer } from './support.js';

const ENDPOINT = 'http://nova.example:8774/v2.1';
/** What each server of the tests holds. */
const SERVER: ResourceAmounts = { cores: 2, ramMiB: 1024, instances: 1 };
const ask = (needs: ResourceAmounts): AcquireRequest => ({ place: undefined, needs, ttlMs: 60_000, joinIfShort: false });

/**
 * Nova's `/limits` as the tests move it: 8 cores, 8192 MiB, unlimited instances; `used` what it
 * counts now; `blank` answers an empty `absolute` (headroom unknown). Counts its reads.
 */
class Nova {
  used = { cores: 0, ramMiB: 0, instances: 0 };
  blank = false;
  reads = 0;
  readonly read = async (): Promise<LimitsReading> => {
    this.reads += 1;
    if (this.blank) return { absolute: {}, requestId: `req-${this.reads}` };
    return {
      absolute: { maxTotalCores: 8, totalCoresUsed: this.used.cores, maxTotalRAMSize: 8192, totalRAMUsed: this.used.ramMiB, maxTotalInstances: Infinity, totalInstancesUsed: this.used.instances, maxServerMeta: 128 },
      requestId: `req-${this.reads}`,
    };
  };
  count(n: ResourceAmounts, sign: 1 | -1): void {
    this.used = { cores: this.used.cores + sign * n.cores, ramMiB: this.used.ramMiB + sign * n.ramMiB, instances: this.used.instances + sign * n.instances };
  }
}

describe.skipIf(!haveRedis)(`RedisQuotaLedger: the credit of a confirmed deletion${haveRedis ? '' : ` (${skipReason})`}`, () => {
  const server = useRedisServer();
  let n = 0;

  /** A new scope (project) per test. */
  function scope(): string {
    n += 1;
    return `credit${n}`;
  }
  function ledger(projectId: string, holder: string): RedisQuotaLedger {
    const l = new RedisQuotaLedger({ url: server.url, endpoint: ENDPOINT, projectId, holder, limitsMaxAgeMs: 60_000 });
    afterThisTest(() => l.close());
    return l;
  }
  /** The kept reading's `absolute` as Redis holds it. */
  async function keptAbsolute(projectId: string): Promise<Record<string, unknown>> {
    const r = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await r.connect();
    try {
      const json = await r.hget(ledgerKeys('nova-guard:', ENDPOINT, projectId).limits, 'json');
      return (JSON.parse(json ?? '{}') as { absolute?: Record<string, unknown> }).absolute ?? {};
    } finally {
      r.disconnect();
    }
  }

  /** A server created under a claim of `l` (admitted, bound, counted by Nova); released as `'counted'` unless `release` says otherwise. */
  async function created(l: RedisQuotaLedger, nova: Nova, serverId: string, release: 'counted' | 'not-created' | 'later' = 'counted'): Promise<LedgerClaim> {
    const got = await l.acquire(ask(SERVER), nova.read, undefined);
    if (!got.admitted) throw new Error(`not admitted: ${JSON.stringify(got)}`);
    await l.bind(got.claim, serverId);
    nova.count(SERVER, 1);
    if (release !== 'later') await l.release(got.claim, release);
    return got.claim;
  }

  /** A new kept reading, sent now (a deletion of a server the ledger knows nothing of makes the old one stale): its stamp. */
  async function refreshed(l: RedisQuotaLedger, nova: Nova): Promise<number> {
    await l.publishFreed('not-one-of-ours');
    const before = nova.reads;
    const { reading } = await l.peek(nova.read, undefined);
    expect(nova.reads).toBe(before + 1);
    return reading.stamp;
  }

  /**
   * The positive control every "not credited" case ends with (so that no case can pass on a ledger
   * that never credits): `serverId`, created under `claim` and counted in the kept reading, is
   * deleted; with the credit, holder `b` is admitted without a read on usage lowered by the server.
   */
  async function creditHolds(a: RedisQuotaLedger, b: RedisQuotaLedger, nova: Nova, serverId: string, claim: LedgerClaim): Promise<void> {
    // b stored the last reading; a knows it from b's message.
    expect(await until(() => b.keptSeen() !== undefined && a.keptSeen() === b.keptSeen(), 5_000)).toBe(true);
    const keptSeq = a.keptSeen();
    const usedBefore = { ...nova.used };
    nova.count(SERVER, -1);
    await a.publishFreed(serverId, { claimId: claim.id, keptSeq: keptSeq! });
    const reads = nova.reads;
    const got = await b.acquire(ask({ cores: 8 - usedBefore.cores + SERVER.cores, ramMiB: 0, instances: 1 }), nova.read, undefined);
    expect(nova.reads).toBe(reads);
    expect(got).toMatchObject({ admitted: true, reading: { stamp: keptSeq, shared: true, absolute: { totalCoresUsed: usedBefore.cores - SERVER.cores, totalRAMUsed: usedBefore.ramMiB - SERVER.ramMiB, totalInstancesUsed: usedBefore.instances - SERVER.instances } } });
  }

  /** Holder `b` acquires: the kept reading was stale, so Nova was read and the reading is its. */
  async function readAgain(b: RedisQuotaLedger, nova: Nova): Promise<void> {
    const reads = nova.reads;
    const got = await b.acquire(ask({ cores: 1, ramMiB: 0, instances: 1 }), nova.read, undefined);
    expect(nova.reads).toBe(reads + 1);
    expect(got.reading).toMatchObject({ shared: false, absolute: { totalCoresUsed: nova.used.cores } });
    if (got.admitted) await b.release(got.claim, 'not-created');
  }

  it('a credit that holds: the kept reading loses the server\'s usage and stays fresh; the next holder is admitted on it without a /limits read', async () => {
    const p = scope();
    const a = ledger(p, 'a');
    const nova = new Nova();
    const claim = await created(a, nova, 'srv-1');
    expect(nova.reads).toBe(1);
    // A reading sent after the 'counted' release: it counts srv-1.
    const stamp = await refreshed(a, nova);
    expect(a.keptSeen()).toBe(stamp);
    const keptSeq = a.keptSeen()!;
    // The DELETE is sent, Nova confirms it (404): Nova counts 0 now.
    nova.count(SERVER, -1);
    await a.publishFreed('srv-1', { claimId: claim.id, keptSeq });
    expect(await keptAbsolute(p)).toMatchObject({ totalCoresUsed: 0, totalRAMUsed: 0, totalInstancesUsed: 0, maxTotalCores: 8, maxTotalInstances: 'Infinity', maxServerMeta: 128 });
    // A holder that connects now: its first acquire is decided on the credited reading (all 8 cores fit), no read.
    const b = ledger(p, 'b');
    const got = await b.acquire(ask({ cores: 8, ramMiB: 8192, instances: 1 }), nova.read, undefined);
    expect(nova.reads).toBe(2);
    expect(got).toMatchObject({ admitted: true, reading: { stamp: keptSeq, shared: true, absolute: { totalCoresUsed: 0, totalRAMUsed: 0, totalInstancesUsed: 0, maxTotalInstances: Infinity } } });
    // Its own acquire's answer told it which reading is kept (fresh).
    expect(b.keptSeen()).toBe(keptSeq);
    // peek (limits) hands out the credited reading too.
    const peeked = await a.peek(nova.read, undefined);
    expect(nova.reads).toBe(2);
    expect(peeked.reading).toMatchObject({ stamp: keptSeq, absolute: { totalCoresUsed: 0 } });
  });

  it('not credited when the credit names an older reading than the one kept: stale, read again', async () => {
    const p = scope();
    const [a, b] = [ledger(p, 'a'), ledger(p, 'b')];
    const nova = new Nova();
    const c1 = await created(a, nova, 'srv-1');
    const c2 = await created(a, nova, 'srv-2');
    const older = await refreshed(a, nova);
    expect(a.keptSeen()).toBe(older);
    const newer = await refreshed(a, nova);
    expect(newer).toBeGreaterThan(older);
    nova.count(SERVER, -1);
    await a.publishFreed('srv-1', { claimId: c1.id, keptSeq: older });
    expect(await keptAbsolute(p)).toMatchObject({ totalCoresUsed: 4 });
    await readAgain(b, nova);
    await creditHolds(a, b, nova, 'srv-2', c2);
  });

  it('not credited when the claim was released as counted after the kept reading was sent', async () => {
    const p = scope();
    const [a, b] = [ledger(p, 'a'), ledger(p, 'b')];
    const nova = new Nova();
    const c1 = await created(a, nova, 'srv-1', 'later');
    const c2 = await created(a, nova, 'srv-2');
    const stamp = await refreshed(a, nova);
    await a.release(c1, 'counted');
    nova.count(SERVER, -1);
    await a.publishFreed('srv-1', { claimId: c1.id, keptSeq: stamp });
    expect(await keptAbsolute(p)).toMatchObject({ totalCoresUsed: 4 });
    await readAgain(b, nova);
    await creditHolds(a, b, nova, 'srv-2', c2);
  });

  it('not credited when the claim ended as not-created, or is unknown to the ledger', async () => {
    const p = scope();
    const [a, b] = [ledger(p, 'a'), ledger(p, 'b')];
    const nova = new Nova();
    const c1 = await created(a, nova, 'srv-1', 'not-created');
    const c2 = await created(a, nova, 'srv-2');
    const c3 = await created(a, nova, 'srv-3');
    let stamp = await refreshed(a, nova);
    nova.count(SERVER, -1);
    await a.publishFreed('srv-1', { claimId: c1.id, keptSeq: stamp });
    expect(await keptAbsolute(p)).toMatchObject({ totalCoresUsed: 6 });
    await readAgain(b, nova);
    stamp = b.keptSeen()!;
    nova.count(SERVER, -1);
    await a.publishFreed('srv-2', { claimId: 'no-such-claim', keptSeq: stamp });
    await readAgain(b, nova);
    await creditHolds(a, b, nova, 'srv-3', c3);
    void c2;
  });

  it('a claim is credited once per reading: the same credit again is not subtracted again, it makes the reading stale', async () => {
    const p = scope();
    const [a, b] = [ledger(p, 'a'), ledger(p, 'b')];
    const nova = new Nova();
    const c1 = await created(a, nova, 'srv-1');
    await created(a, nova, 'srv-2');
    const stamp = await refreshed(a, nova);
    nova.count(SERVER, -1);
    await a.publishFreed('srv-1', { claimId: c1.id, keptSeq: stamp });
    expect(await keptAbsolute(p)).toMatchObject({ totalCoresUsed: 2, totalRAMUsed: 1024, totalInstancesUsed: 1 });
    // The same deletion published twice (a retry, a second caller): srv-2 is still there, so 2 cores stay counted.
    await a.publishFreed('srv-1', { claimId: c1.id, keptSeq: stamp });
    expect(await keptAbsolute(p)).toMatchObject({ totalCoresUsed: 2, totalRAMUsed: 1024, totalInstancesUsed: 1 });
    await readAgain(b, nova);
  });

  it('not credited without a credit, nor on a reading with no usage to subtract from (absolute {})', async () => {
    const p = scope();
    const [a, b] = [ledger(p, 'a'), ledger(p, 'b')];
    const nova = new Nova();
    const c1 = await created(a, nova, 'srv-1');
    const c2 = await created(a, nova, 'srv-2');
    const c3 = await created(a, nova, 'srv-3');
    await refreshed(a, nova);
    nova.count(SERVER, -1);
    await a.publishFreed('srv-1');
    await readAgain(b, nova);
    nova.blank = true;
    const blank = await refreshed(a, nova);
    nova.count(SERVER, -1);
    await a.publishFreed('srv-2', { claimId: c2.id, keptSeq: blank });
    expect(await keptAbsolute(p)).toEqual({});
    nova.blank = false;
    await readAgain(b, nova);
    await creditHolds(a, b, nova, 'srv-3', c3);
    void c1;
  });

  it('keptSeen: from another holder\'s "kept reading refreshed" message, and never the order number of a read not stored yet', async () => {
    const p = scope();
    const [a, b] = [ledger(p, 'a'), ledger(p, 'b')];
    const nova = new Nova();
    expect(a.keptSeen()).toBeUndefined();
    expect(b.keptSeen()).toBeUndefined();
    // b connected and subscribed: it hears a's deletions.
    let heard = 0;
    b.onFreed(() => (heard += 1));
    await b.probe();
    for (let i = 0; i < 50 && heard === 0; i++) {
      await a.publishFreed('x');
      await until(() => heard > 0, 100);
    }
    expect(heard).toBeGreaterThan(0);
    const first = await refreshed(a, nova);
    expect(a.keptSeen()).toBe(first);
    expect(await until(() => b.keptSeen() === first, 5_000)).toBe(true);
    // a takes the refresh lock (its read's order number is taken) and reads slowly.
    await a.publishFreed('y');
    let open: () => void = () => {};
    const gate = new Promise<void>((r) => (open = r));
    let reading = false;
    const slow = async (): Promise<LimitsReading> => {
      reading = true;
      await gate;
      return nova.read();
    };
    const pending = a.acquire(ask(SERVER), slow, undefined);
    expect(await until(() => reading, 5_000)).toBe(true);
    expect(a.keptSeen()).toBe(first);
    expect(b.keptSeen()).toBe(first);
    open();
    const got = await pending;
    expect(got.reading.stamp).toBeGreaterThan(first);
    // Stored by its acquire (storeAdmit), known at once; b hears it.
    expect(a.keptSeen()).toBe(got.reading.stamp);
    expect(await until(() => b.keptSeen() === got.reading.stamp, 5_000)).toBe(true);
  });

  it('publishFreed refuses a malformed credit before any request', async () => {
    const a = ledger(scope(), 'a');
    await expect(a.publishFreed('s', { claimId: '', keptSeq: 1 })).rejects.toThrow(ValidationError);
    await expect(a.publishFreed('s', { claimId: 'c', keptSeq: 1.5 })).rejects.toThrow(ValidationError);
    await expect(a.publishFreed('s', { claimId: 'c', keptSeq: -1 })).rejects.toThrow(ValidationError);
    await expect(a.publishFreed('s', { claimId: 'c', keptSeq: 1 })).resolves.toBeUndefined();
  });
});
