// InProcessQuotaLedger: the QuotaLedger protocol of one process (counted releases against the
// reading's stamp, FIFO places, leases on the injected clock, fencing tokens, freed wake-ups).
import { describe, expect, it } from 'vitest';
import { systemClock, type Clock } from '../../src/core/clock.js';
import { InProcessQuotaLedger, READ_GRACE_MS } from '../../src/ledger/inProcess.js';
import { ValidationError } from '../../src/errors/index.js';

/** A clock whose `now` the test sets. */
function manualClock(): Clock & { at: number } {
  const c = { ...systemClock, at: 0, now: () => c.at };
  return c;
}

const read = async (): Promise<{ absolute: Record<string, number>; requestId: string }> => ({ absolute: { maxTotalCores: 4, totalCoresUsed: 0 }, requestId: 'req-1' });
const two = { cores: 2, ramMiB: 0, instances: 1 };
const room = (cores: number): { cores: number; ramMiB: undefined; instances: undefined } => ({ cores, ramMiB: undefined, instances: undefined });

describe('InProcessQuotaLedger', () => {
  it('limits reads afresh: stamp is the clock before the read, age 0, not shared; holder defaults to host:pid', async () => {
    const clock = manualClock();
    clock.at = 42;
    const l = new InProcessQuotaLedger({ clock });
    const r = await l.limits(async () => {
      clock.at = 50;
      return read();
    }, undefined);
    expect(r).toEqual({ absolute: { maxTotalCores: 4, totalCoresUsed: 0 }, requestId: 'req-1', stamp: 42, ageMs: 0, shared: false });
    expect(l.holder).toBe(`${(await import('node:os')).hostname()}:${process.pid}`);
    expect(new InProcessQuotaLedger({ holder: 'ci-7' }).holder).toBe('ci-7');
    expect(l.kind).toBe('in-process');
  });

  it("a 'counted' release still counts for a reading sent before it, not for one sent after", async () => {
    const clock = manualClock();
    const l = new InProcessQuotaLedger({ clock });
    const c = await l.claimAnyway(two, 10_000);
    clock.at = 10;
    const early = await l.limits(read, undefined);
    clock.at = 20;
    await l.release(c, 'counted');
    clock.at = 30;
    const late = await l.limits(read, undefined);
    const a = await l.admit({ place: undefined, needs: two, headroom: room(4), stamp: early.stamp, ttlMs: 1000 });
    expect(a.inFlight).toEqual({ cores: 2, ramMiB: 0, instances: 1 });
    expect(a.admitted).toBe(true);
    const b = await l.admit({ place: undefined, needs: two, headroom: room(4), stamp: late.stamp, ttlMs: 1000 });
    // only the claim just taken by `a` counts now
    expect(b.inFlight).toEqual({ cores: 2, ramMiB: 0, instances: 1 });
    expect(b.admitted).toBe(true);
    // with the earlier reading answered and admitted, the release is no longer kept
    const after = await l.limits(read, undefined);
    expect(await l.inFlight(after.stamp)).toEqual({ cores: 4, ramMiB: 0, instances: 2 });
  });

  it('a reading never admitted keeps releases for READ_GRACE_MS at most', async () => {
    const clock = manualClock();
    const l = new InProcessQuotaLedger({ clock });
    const c = await l.claimAnyway(two, 10 * READ_GRACE_MS);
    const forgotten = await l.limits(read, undefined); // e.g. headroom() that failed before its admit
    clock.at = 5;
    await l.release(c, 'counted');
    expect(await l.inFlight(forgotten.stamp)).toEqual({ cores: 2, ramMiB: 0, instances: 1 });
    const other = await l.limits(read, undefined);
    clock.at = 5 + READ_GRACE_MS + 1;
    // `other` ends after its grace: the release from before it is gone for any stamp
    expect(await l.inFlight(other.stamp - 5)).toEqual({ cores: 0, ramMiB: 0, instances: 0 });
  });

  it('admits first come, first served: places queued ahead are subtracted; a newcomer waits behind them', async () => {
    const l = new InProcessQuotaLedger({ clock: manualClock() });
    const first = await l.join({ cores: 4, ramMiB: 0, instances: 1 });
    const second = await l.join(two);
    const r = await l.limits(read, undefined);
    const newcomer = await l.admit({ place: undefined, needs: two, headroom: room(4), stamp: r.stamp, ttlMs: 1000 });
    expect(newcomer).toEqual({ admitted: false, inFlight: { cores: 0, ramMiB: 0, instances: 0 }, ahead: { cores: 6, ramMiB: 0, instances: 2 }, holders: 1 });
    const r2 = await l.limits(read, undefined);
    const s = await l.admit({ place: second, needs: two, headroom: room(4), stamp: r2.stamp, ttlMs: 1000 });
    expect(s.admitted).toBe(false);
    expect(s.ahead).toEqual({ cores: 4, ramMiB: 0, instances: 1 });
    const r3 = await l.limits(read, undefined);
    const f = await l.admit({ place: first, needs: first.needs, headroom: room(4), stamp: r3.stamp, ttlMs: 1000 });
    expect(f.admitted).toBe(true);
    await l.leave(first);
    await l.leave(first); // idempotent
    const r4 = await l.limits(read, undefined);
    // 4 free, 4 claimed by `first`: nothing left for `second`
    expect((await l.admit({ place: second, needs: two, headroom: room(4), stamp: r4.stamp, ttlMs: 1000 })).admitted).toBe(false);
    const r5 = await l.limits(read, undefined);
    expect((await l.admit({ place: second, needs: two, headroom: room(8), stamp: r5.stamp, ttlMs: 1000 })).admitted).toBe(true);
  });

  it('unknown or unlimited headroom never blocks; a need above the headroom does', async () => {
    const l = new InProcessQuotaLedger({ clock: manualClock() });
    const r = await l.limits(read, undefined);
    expect((await l.admit({ place: undefined, needs: two, headroom: {}, stamp: r.stamp, ttlMs: 1000 })).admitted).toBe(true);
    expect((await l.admit({ place: undefined, needs: two, headroom: { cores: Number.POSITIVE_INFINITY }, stamp: r.stamp, ttlMs: 1000 })).admitted).toBe(true);
    expect((await l.admit({ place: undefined, needs: two, headroom: room(3), stamp: r.stamp, ttlMs: 1000 })).admitted).toBe(false);
  });

  it('leases expire on the clock unless renewed; renew is false once released or expired', async () => {
    const clock = manualClock();
    const l = new InProcessQuotaLedger({ clock });
    const a = await l.claimAnyway(two, 100);
    const b = await l.claimAnyway(two, 100);
    clock.at = 99;
    expect(await l.renew(a, 100)).toBe(true); // a now lasts until 199
    clock.at = 100;
    expect(await l.renew(b, 100)).toBe(false);
    expect(l.activeClaims).toBe(1);
    clock.at = 198;
    expect(l.activeClaims).toBe(1);
    clock.at = 199;
    expect(l.activeClaims).toBe(0);
    expect(await l.renew(a, 100)).toBe(false);
    const c = await l.claimAnyway(two, 100);
    await l.release(c, 'not-created');
    expect(await l.renew(c, 100)).toBe(false);
    const r = await l.limits(read, undefined);
    expect(await l.inFlight(r.stamp)).toEqual({ cores: 0, ramMiB: 0, instances: 0 });
  });

  it('fencing tokens strictly increase across claims and holders of one ledger; claim ids are unique', async () => {
    const l = new InProcessQuotaLedger({ clock: manualClock(), holder: 'h' });
    const r = await l.limits(read, undefined);
    const claims = [await l.claimAnyway(two, 10), await l.claimAnyway(two, 10)];
    const admitted = await l.admit({ place: undefined, needs: two, headroom: {}, stamp: r.stamp, ttlMs: 10 });
    if (admitted.admitted) claims.push(admitted.claim);
    expect(claims.map((c) => c.token)).toEqual([1, 2, 3]);
    expect(new Set(claims.map((c) => c.id)).size).toBe(3);
    expect(claims.every((c) => c.holder === 'h')).toBe(true);
  });

  it('publishFreed wakes every onFreed listener at once; unsubscribe stops it', async () => {
    const l = new InProcessQuotaLedger();
    const heard: string[] = [];
    const off = l.onFreed(() => heard.push('a'));
    l.onFreed(() => heard.push('b'));
    await l.publishFreed('srv-1');
    off();
    await l.publishFreed('srv-2');
    expect(heard).toEqual(['a', 'b', 'b']);
  });

  it('onWake: a freed server wakes the head of the queue only; the head leaving wakes the next; a wake-up nobody heard is told when a listener comes', async () => {
    const l = new InProcessQuotaLedger();
    const [a, b, c] = [await l.join(two), await l.join(two), await l.join(two)];
    const heard: string[] = [];
    const offA = l.onWake(a, () => heard.push('a'));
    l.onWake(b, () => heard.push('b'));
    l.onWake(c, () => heard.push('c'));
    await l.publishFreed('srv-1');
    expect(heard).toEqual(['a']);
    await l.publishFreed('srv-2');
    expect(heard).toEqual(['a', 'a']);
    // a place behind the head leaving wakes nobody
    await l.leave(b);
    expect(heard).toEqual(['a', 'a']);
    // the head leaving (admitted, or gave up) wakes the next
    offA();
    await l.leave(a);
    expect(heard).toEqual(['a', 'a', 'c']);
    // a head nobody listens for keeps its wake-up until a listener comes, and only once
    const d = await l.join(two);
    await l.leave(c);
    expect(heard).toEqual(['a', 'a', 'c']);
    const offD = l.onWake(d, () => heard.push('d'));
    expect(heard).toEqual(['a', 'a', 'c', 'd']);
    offD();
    l.onWake(d, () => heard.push('d again'));
    expect(heard).toEqual(['a', 'a', 'c', 'd']);
    await l.publishFreed('srv-3');
    expect(heard).toEqual(['a', 'a', 'c', 'd', 'd again']);
    // an empty queue: nothing to wake, nothing kept for a later place
    await l.leave(d);
    const e = await l.join(two);
    l.onWake(e, () => heard.push('e'));
    expect(heard).toEqual(['a', 'a', 'c', 'd', 'd again']);
  });

  it('acquire reads afresh, admits on the raw headroom of the reading, joins when short and asked to; holders 1, probe answers', async () => {
    const l = new InProcessQuotaLedger();
    let reads = 0;
    const read = async () => {
      reads += 1;
      return { absolute: { maxTotalCores: 4, totalCoresUsed: 1, maxTotalInstances: Infinity, totalInstancesUsed: 9 }, requestId: `r${reads}` };
    };
    const two = { cores: 2, ramMiB: 0, instances: 1 };
    const got = await l.acquire({ place: undefined, needs: two, ttlMs: 10_000, joinIfShort: true }, read, undefined);
    expect(got).toMatchObject({ admitted: true, holders: 1, reading: { requestId: 'r1', shared: false, ageMs: 0 } });
    expect(got.place).toBeUndefined();
    const short = await l.acquire({ place: undefined, needs: two, ttlMs: 10_000, joinIfShort: true }, read, undefined);
    expect(short).toMatchObject({ admitted: false, inFlight: { cores: 2 }, holders: 1, reading: { requestId: 'r2' } });
    expect(short.place).toMatchObject({ needs: two });
    const noJoin = await l.acquire({ place: undefined, needs: two, ttlMs: 10_000, joinIfShort: false }, read, undefined);
    expect(noJoin.place).toBeUndefined();
    expect(noJoin).toMatchObject({ admitted: false, ahead: { cores: 2 } });
    expect(l.callBudgetMs()).toBeUndefined();
    await expect(l.probe()).resolves.toBeUndefined();
  });

  it('refuses misspelt and bad options instead of ignoring them', () => {
    const clock = manualClock();
    const bad: Array<[unknown, RegExp]> = [
      [{ clok: clock }, /unknown option "clok" \(did you mean clock\?\)/],
      ['x', /must be an object/],
      [null, /must be an object/],
      [{ clock: {} }, /clock must be a Clock/],
      [{ clock: 5 }, /clock must be a Clock/],
      [{ holder: 5 }, /holder must be a non-empty string without commas, got 5/],
      [{ holder: '' }, /holder must be a non-empty string/],
      [{ holder: 'a,b' }, /without commas, got "a,b"/],
    ];
    for (const [options, message] of bad) {
      expect(() => new InProcessQuotaLedger(options as never), JSON.stringify(options)).toThrow(ValidationError);
      expect(() => new InProcessQuotaLedger(options as never)).toThrow(message);
    }
    expect(new InProcessQuotaLedger({ clock, holder: 'ci-7:1' }).holder).toBe('ci-7:1');
    expect(new InProcessQuotaLedger(undefined).kind).toBe('in-process');
  });
});
