// A ledger that cannot work for a reason of its setup (issue 32 item 1) against one that is out:
// Redis refusing the credentials before the ledger ever answered an admission is a LedgerConfigError
// thrown by the guard's first call (no POST, no outage, no fallback); the same refusal once the
// ledger has answered is an outage (degraded mode, as before). `ledgerFallback: 'in-process'` is the
// soft start; every fallback counts in `stats.ledgerFallbacks` and warns once per cause
// (`onWarning`, or `process.emitWarning(…, 'NovaGuardLedgerWarning')` once per process). Fake timers,
// FakeNova, a test ledger over the in-process one whose calls reject with the Redis ledger's own error.
import { describe, expect, it, vi } from 'vitest';
import { InProcessQuotaLedger } from '../../src/ledger/inProcess.js';
import type { QuotaLedger } from '../../src/ledger/port.js';
import { RedisLedgerError } from '../../src/redis/errors.js';
import { ConfigError, LedgerConfigError, NovaGuardError, ValidationError } from '../../src/index.js';
import { rejection, settle, useFakeClock } from '../helpers.js';
import { body, clientFor, guardFor, posts, startNova } from './fixtures.js';
import { faulty, warnLog } from './support/testLedger.js';

useFakeClock();

/** The Redis ledger's rejection while Redis refuses the URL's password (connection.ts, `#downError`). */
const wrongPass = (): RedisLedgerError =>
  new RedisLedgerError('Redis ledger: Redis cannot be reached (WRONGPASS invalid username-password pair or user is disabled.)', { downCode: 'WRONGPASS' });

/** A test ledger of kind `kind` whose calls reject with {@link wrongPass} while `refusing()`. */
function refusingLedger(inner: InProcessQuotaLedger, refusing: () => boolean, kind = 'redis'): QuotaLedger & { calls: Array<[string, number]> } {
  const ledger = faulty(inner, () => 'ok');
  const refuse =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> =>
      refusing() ? Promise.reject(wrongPass()) : fn(...args);
  return Object.assign(ledger, { kind, acquire: refuse(ledger.acquire), peek: refuse(ledger.peek), probe: refuse(ledger.probe), claimAnyway: refuse(ledger.claimAnyway) });
}

describe('Redis refusing the credentials before the ledger ever answered: a setup error, not an outage', () => {
  it('createServer and headroom reject with a LedgerConfigError (a ConfigError) naming the cause and the fix: no POST, no outage, no fallback', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const ledger = refusingLedger(new InProcessQuotaLedger({ clock: clientFor(nova).clock }), () => true);
    const { logger, warnings } = warnLog();
    const warned: string[] = [];
    const guard = guardFor(nova, { ledger, logger, maxWaitMs: 60_000, onWarning: (m) => warned.push(m) });
    const started = Date.now();
    const e = await settle(rejection(guard.createServer(body('a'))));
    expect(e).toBeInstanceOf(LedgerConfigError);
    expect(e).toBeInstanceOf(ConfigError);
    expect(e).toBeInstanceOf(NovaGuardError);
    expect(e).toMatchObject({ name: 'LedgerConfigError', kind: 'redis', reason: 'credentials-refused' });
    expect(e.message).toMatch(/Redis refused its credentials \(WRONGPASS invalid username-password pair/);
    expect(e.message).toMatch(/Fix: check the password in the ledger URL/);
    expect((e as LedgerConfigError).cause).toBeInstanceOf(RedisLedgerError);
    // at once: not after the 3 s a ledger never reached is waited for, nor after maxWaitMs
    expect(Date.now() - started).toBeLessThan(100);
    expect(await settle(rejection(guard.headroom()))).toBeInstanceOf(LedgerConfigError);
    // every call says it again (the setup may be fixed meanwhile: nothing is remembered)
    expect(await settle(rejection(guard.createServer(body('b'))))).toBeInstanceOf(LedgerConfigError);
    expect(posts(nova)).toHaveLength(0);
    expect(guard.stats).toMatchObject({ ledgerFallbacks: 0, ledgerOutages: 0, failed: 2 });
    expect(warnings()).toEqual([]);
    expect(warned).toEqual([]);
    await guard.close();
  });

  it('the same refusal after the ledger answered an admission of this guard is an outage: degraded mode as before (no LedgerConfigError)', async () => {
    const nova = await startNova({ maxTotalCores: 10, maxTotalInstances: 100 });
    let refusing = false;
    const ledger = refusingLedger(new InProcessQuotaLedger({ clock: clientFor(nova).clock }), () => refusing);
    const warned: string[] = [];
    const guard = guardFor(nova, { ledger, maxWaitMs: 60_000, onWarning: (m) => warned.push(m) });
    await settle(guard.createServer(body('answered')));
    refusing = true; // the password rotated under a running worker
    const second = await settle(guard.createServer(body('during')).then((s) => s, (err: unknown) => err as Error));
    expect(second).not.toBeInstanceOf(LedgerConfigError);
    expect(guard.stats.ledgerOutages).toBe(1);
    expect(guard.stats.ledgerFallbacks).toBeGreaterThanOrEqual(1);
    // the fallback's one warning (process-wide by default; here this guard's hook)
    // naming its cause (the ledger's own redacted words), not only "failed"
    expect(warned).toEqual([
      'quota ledger (redis) failed (Redis ledger: Redis cannot be reached (WRONGPASS invalid username-password pair or user is disabled.)): creates wait for it (other hosts may still admit on it)',
    ]);
    await guard.close();
  });
});

describe("ledgerFallback: 'in-process' (the soft start)", () => {
  it('goes on with the in-process ledger at once: every call counted in stats.ledgerFallbacks, one warning for the guard and one onWarning call for two guards sharing the hook', async () => {
    const nova = await startNova({ maxTotalCores: 100, maxTotalInstances: 100 });
    const warned: string[] = [];
    const onWarning = (m: string): number => warned.push(m);
    const { logger, warnings } = warnLog();
    const guards = [0, 1].map(() => guardFor(nova, { ledger: refusingLedger(new InProcessQuotaLedger({ clock: clientFor(nova).clock }), () => true), ledgerFallback: 'in-process', onWarning, logger }));
    const started = Date.now();
    for (const [i, g] of guards.entries()) for (let j = 0; j < 3; j++) await settle(g.createServer(body(`g${i}-${j}`)));
    expect(posts(nova)).toHaveLength(6);
    expect(Date.now() - started).toBeLessThan(500); // no NEVER_REACHED_WAIT_MS, no probe
    for (const g of guards) expect(g.stats).toMatchObject({ succeeded: 3, ledgerFallbacks: 3, ledgerOutages: 0 });
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatch(/^quota ledger \(redis\): the Redis ledger cannot work: Redis refused its credentials .*Fix: .*ledgerFallback 'in-process': this process goes on with its own in-process ledger/);
    expect(warnings().filter((m) => /cannot work/.test(m))).toHaveLength(2); // one per guard on its logger
    for (const g of guards) await g.close();
  });

  it('is checked with the other options: an unknown value is a ValidationError at construction', async () => {
    const nova = await startNova();
    expect(() => guardFor(nova, { ledgerFallback: 'in-process', onWarning: () => undefined })).not.toThrow();
    expect(guardFor(nova).options.ledgerFallback).toBe('throw');
    expect(() => guardFor(nova, { ledgerFallback: 'memory' as never })).toThrow(ValidationError);
    expect(() => guardFor(nova, { onWarning: 'stderr' as never })).toThrow(ValidationError);
  });
});

describe('the process warning of a fallback', () => {
  it("without onWarning: process.emitWarning(message, 'NovaGuardLedgerWarning') once per process and cause, however many guards and fallbacks", async () => {
    const nova = await startNova({ maxTotalCores: 100, maxTotalInstances: 100 });
    // Node's own emitWarning, watched (and kept off the suite's stderr)
    const emitted = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    // a kind of its own: the process-wide memory of causes is not this test's alone
    const kind = `setup-test-${process.pid}-${Math.random()}`;
    const guards = [0, 1].map(() => guardFor(nova, { ledger: refusingLedger(new InProcessQuotaLedger({ clock: clientFor(nova).clock }), () => true, kind), ledgerFallback: 'in-process', onWarning: undefined }));
    for (const g of guards) for (let j = 0; j < 2; j++) await settle(g.createServer(body(`w${j}`)));
    const mine = emitted.mock.calls.filter(([message]) => String(message).includes(kind));
    expect(mine).toHaveLength(1);
    expect(mine[0]![1]).toBe('NovaGuardLedgerWarning');
    expect(String(mine[0]![0])).toMatch(/Redis refused its credentials/);
    for (const g of guards) await g.close();
  });

  it('an outage (a ledger down from the start): every fallback counted, one onWarning for the cause', async () => {
    const nova = await startNova({ maxTotalCores: 100, maxTotalInstances: 100 });
    const ledger = faulty(new InProcessQuotaLedger({ clock: clientFor(nova).clock }), () => 'down');
    const warned: string[] = [];
    const guard = guardFor(nova, { ledger, maxWaitMs: 60_000, onWarning: (m) => warned.push(m) });
    for (let i = 0; i < 4; i++) await settle(guard.createServer(body(`o${i}`)));
    expect(posts(nova)).toHaveLength(4);
    expect(guard.stats.ledgerOutages).toBe(1);
    expect(guard.stats.ledgerFallbacks).toBeGreaterThanOrEqual(4);
    // naming its cause, not only "failed"
    expect(warned).toEqual([
      "quota ledger (test) failed (connect ECONNREFUSED (ledger acquire)): creates wait up to 3000 ms more for it (it may be starting), then admit with the in-process ledger (this process alone; Nova's quota check decides the rest) until it is back",
    ]);
    await guard.close();
  });
});
