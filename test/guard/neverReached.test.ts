// A ledger never reached since start-up (a typo in the host name: ENOTFOUND; a closed port:
// ECONNREFUSED), through QuotaGuard with the default backoff: the create goes on (degraded mode
// costs time, never jobs), and what the warnings say is what happens. Before, the wait "up to 3000
// ms" took two backoff steps (2 s + 4 s), and the process warning said "going on with the
// in-process ledger" at the moment the creates started to wait. Fake timers, FakeNova.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { InProcessQuotaLedger } from '../../src/ledger/inProcess.js';
import { T0, runUntil, settle, untilReal, useFakeClock } from '../helpers.js';
import type { QuotaWaitInfo } from '../../src/guard/options.js';
import { QuotaWaitTimeoutError } from '../../src/guard/errors.js';
import { body, clientFor, guardFor, posts, startNova } from './fixtures.js';
import { faulty, warnLog, type Fault, type TestLedgerExtras } from './support/testLedger.js';

useFakeClock();
afterEach(() => {
  vi.restoreAllMocks();
});

/** The defaults' backoff (FAST's steps are short enough to hide an overshoot). */
const DEFAULT_BACKOFF = { minDelayMs: 1000, baseDelayMs: 2000, maxDelayMs: 60_000, maxWaitMs: 60_000 };

const ALONE = "admit with the in-process ledger (this process alone; Nova's quota check decides the rest) until it is back";
const NOT_FOUND = 'Redis ledger at redis://[REDACTED]@nosuchhost:6379: Redis cannot be reached (getaddrinfo ENOTFOUND nosuchhost)';
const HINT = "; its host name does not resolve: check it in the ledger object's URL";

async function createOn(fault: Fault, extras: TestLedgerExtras = {}, maxWaitMs = DEFAULT_BACKOFF.maxWaitMs) {
  const nova = await startNova({ maxTotalCores: 100 });
  const ledger = faulty(new InProcessQuotaLedger({ clock: clientFor(nova).clock }), () => fault, extras);
  const { logger, warnings } = warnLog();
  const warned: string[] = [];
  const waits: QuotaWaitInfo[] = [];
  const guard = guardFor(nova, { ...DEFAULT_BACKOFF, maxWaitMs, ledger, logger, onWarning: (m) => warned.push(m), onWait: (w) => void waits.push(w) });
  const server = await settle(guard.createServer(body('c0')).catch((e: unknown) => e as Error));
  const firstCallMs = ledger.calls[0]![1];
  const post = posts(nova)[0];
  await settle(guard.close());
  return { server, warnings: warnings(), warned, waits, waitedMs: post === undefined ? undefined : post.timeMs - T0 - firstCallMs, stats: guard.stats };
}

describe('a ledger never reached since start-up', () => {
  it('ENOTFOUND: one warning that says what happens (a wait of 3000 ms, then alone) and where to check the host name; the creates wait exactly that; no hint once it was reached', async () => {
    const r = await createOn('notfound');
    expect(r.server).toHaveProperty('id');
    // the wait is the 3000 ms the warning says, not the backoff's two steps (2 s + 4 s, about 6 s)
    expect(r.waitedMs).toBe(3000);
    expect(r.waits.reduce((sum, w) => sum + w.delayMs, 0)).toBe(3000);
    expect(r.waits.every((w) => w.reason === 'ledger-out-of-reach')).toBe(true);
    expect(r.warnings).toEqual([
      `quota ledger (test) is down: ${NOT_FOUND}${HINT}; skipping it and probing it from 1000 ms to every 5000 ms; it was never reached: creates wait up to 3000 ms more for it (it may be starting), then ${ALONE}`,
    ]);
    // the process warning of the same moment says the same, never "going on" while the creates wait
    expect(r.warned).toEqual([`quota ledger (test) failed (${NOT_FOUND}${HINT}): creates wait up to 3000 ms more for it (it may be starting), then ${ALONE}`]);
    for (const line of [...r.warnings, ...r.warned]) expect(line).not.toMatch(/going on with the in-process ledger|no create is admitted/);
    expect(r.stats.ledgerOutages).toBe(1);

    // a ledger that was reached (an outage that starts later): no host-name hint, no never-reached wait;
    // its claims may be live in the store past this maxWaitMs: it waits (another host may admit on it)
    const later = await createOn('notfound', { everReached: () => true }, 5000);
    expect(later.server).toBeInstanceOf(QuotaWaitTimeoutError);
    expect(later.warnings[0]).toBe(
      `quota ledger (test) is down: ${NOT_FOUND}; skipping it and probing it from 1000 ms to every 5000 ms; meanwhile guarded creates of this process wait for it while claims of this process may still be live in it, then admit within their share of the quota`,
    );
    expect(later.warned).toEqual([`quota ledger (test) failed (${NOT_FOUND}): creates wait for it (other hosts may still admit on it)`]);
  });

  it('ECONNREFUSED (a Redis that may be starting): the same wait and words, without the host-name hint', async () => {
    const r = await createOn('down');
    expect(r.waitedMs).toBe(3000);
    expect(r.warnings).toEqual([
      `quota ledger (test) is down: connect ECONNREFUSED (ledger acquire); skipping it and probing it from 1000 ms to every 5000 ms; it was never reached: creates wait up to 3000 ms more for it (it may be starting), then ${ALONE}`,
    ]);
    expect(r.warned).toEqual([`quota ledger (test) failed (connect ECONNREFUSED (ledger acquire)): creates wait up to 3000 ms more for it (it may be starting), then ${ALONE}`]);
  });
});

describe('closing a guard whose ledger is down', () => {
  it('ends the time limit of a probe in flight: no timer of the guard is left to hold the process', async () => {
    const nova = await startNova({ maxTotalCores: 100 });
    // down from the start; its probe hangs (a Redis that takes a connection and never answers)
    const ledger = faulty(new InProcessQuotaLedger({ clock: clientFor(nova).clock }), (m) => (m === 'probe' ? 'hang' : 'down'));
    // a probe's time limit (the ledger's budget) of a minute: still running when the create is done
    const guard = guardFor(nova, { ...DEFAULT_BACKOFF, ledger, ledgerTimeoutMs: 60_000 });
    let created = false;
    const create = guard.createServer(body('c0')).finally(() => (created = true));
    // timer by timer up to the POST, then real I/O only (the clock held): the probe is still running
    await runUntil(() => posts(nova).length === 1);
    await untilReal(() => created);
    await create;
    expect(posts(nova)[0]!.timeMs - T0).toBe(3000);
    expect(ledger.calls.filter(([m]) => m === 'probe')).toHaveLength(1);
    let closed = false;
    void guard.close().finally(() => (closed = true));
    await untilReal(() => closed);
    expect(vi.getTimerCount()).toBe(0);
  });
});
