/**
 * The pieces of the Redis ledger that need no Redis: RFC 6298 round-trip arithmetic behind
 * `callBudgetMs`, which errors mean "Redis cannot be reached at all" (`ledgerDown`), and the
 * second (own) clock of kept readings, on a clock the test sets.
 */
import { describe, expect, it } from 'vitest';
import { systemClock, type Clock } from '../../src/core/clock.js';
import { RoundTrips } from '../../src/redis/connection.js';
import { RedisLedgerError, downCode } from '../../src/redis/errors.js';
import { ReadingAges } from '../../src/redis/readingAges.js';
import { isLedgerDown } from '../../src/guard/index.js';

function manualClock(): Clock & { at: number } {
  const c = { ...systemClock, at: 0, now: () => c.at };
  return c;
}

describe('RoundTrips (RFC 6298)', () => {
  it('first sample: srtt = R, rttvar = R/2, RTO = R + 4 R/2; later ones smooth with 1/8 and 1/4', () => {
    const rt = new RoundTrips();
    expect(rt.rtoMs()).toBeUndefined();
    rt.sample(200);
    expect(rt.srttMs).toBe(200);
    expect(rt.rttvarMs).toBe(100);
    expect(rt.rtoMs()).toBe(600);
    rt.sample(400);
    // rttvar = 3/4 * 100 + 1/4 * |200 - 400| = 125; srtt = 7/8 * 200 + 1/8 * 400 = 225
    expect(rt.rttvarMs).toBe(125);
    expect(rt.srttMs).toBe(225);
    expect(rt.rtoMs()).toBe(725);
    for (let i = 0; i < 200; i++) rt.sample(400);
    expect(rt.srttMs!).toBeCloseTo(400, 3);
    expect(rt.rtoMs()!).toBeCloseTo(401, 0);
  });
});

describe('downCode / ledgerDown', () => {
  it('refused, unknown or unreachable host and refused credentials are "down"; a timeout or a script error is not', () => {
    expect(downCode(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }))).toBe('ECONNREFUSED');
    expect(downCode(Object.assign(new Error('getaddrinfo ENOTFOUND redis.example'), { code: 'ENOTFOUND' }))).toBe('ENOTFOUND');
    expect(downCode(new Error('connect EHOSTUNREACH 10.0.0.9:6379'))).toBe('EHOSTUNREACH');
    expect(downCode(new Error('WRONGPASS invalid username-password pair or user is disabled.'))).toBe('WRONGPASS');
    expect(downCode(new Error('NOAUTH Authentication required.'))).toBe('NOAUTH');
    expect(downCode(new Error("NOPERM this user has no permissions to run the 'evalsha' command"))).toBe('NOPERM');
    expect(downCode('Redis ledger: waiting for the connection got no answer within 2000 ms (last error: WRONGPASS invalid)')).toBe('WRONGPASS');
    expect(downCode(new Error('Redis ledger: novaGuardAdmit got no answer within 2000 ms'))).toBeUndefined();
    expect(downCode(new Error('ERR Error running script'))).toBeUndefined();
    expect(isLedgerDown(new RedisLedgerError('x', { downCode: 'WRONGPASS' }))).toBe(true);
    expect(isLedgerDown(new RedisLedgerError('Redis ledger: closed'))).toBe(false);
  });
});

describe('ReadingAges: the own clock of kept readings', () => {
  it('a reading first seen longer than maxAgeMs ago is stale, with every older one; ages take the older clock', () => {
    const clock = manualClock();
    const ages = new ReadingAges(clock, 1000);
    expect(ages.staleSeq()).toBe(-1);
    ages.saw(10, 0);
    clock.at = 500;
    ages.saw(11, 500);
    clock.at = 1000;
    expect(ages.staleSeq()).toBe(-1);
    clock.at = 1001;
    expect(ages.staleSeq()).toBe(10);
    // A reading Redis's clock calls 0 ms old, seen 600 ms ago here: 600 ms old.
    expect(ages.ageMs(11, 5000, 5000, 1100)).toBe(600);
    // Redis's clock says older: that one.
    expect(ages.ageMs(11, 3000, 5000, 1100)).toBe(2000);
    clock.at = 1501;
    expect(ages.staleSeq()).toBe(11);
    // Seen again after it went stale: it stays stale (not seen afresh).
    ages.saw(11, 1501);
    expect(ages.staleSeq()).toBe(11);
    expect(ages.maxOrder).toBe(11);
  });
});
