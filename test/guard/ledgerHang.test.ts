// A fleet ledger that hangs: the guarded call settles on time (maxWaitMs, the caller's signal),
// cleanup never delays the settle, and an abandoned ledger call never sends a Nova request after
// the call settled. Fake timers, FakeNova adapters.
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { InProcessQuotaLedger } from '../../src/ledger/inProcess.js';
import type { QuotaLedger } from '../../src/ledger/port.js';
import { QuotaWaitTimeoutError } from '../../src/guard/errors.js';
import { AbortError } from '../../src/errors/index.js';
import { T0, rejection, settle, useFakeClock } from '../helpers.js';
import { body, clientFor, guardFor, startNova } from './fixtures.js';

useFakeClock();

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const limitsReads = (nova: { requestsTo(m: string, p: string): unknown[] }): number => nova.requestsTo('GET', '/limits').length;

type Method = Exclude<keyof QuotaLedger, 'kind' | 'holder' | 'scope' | 'bindScope' | 'onFreed' | 'onWake' | 'callBudgetMs' | 'everReached'>;

/**
 * A ledger over `inner` whose methods in `hung` wait for `resume()` and then run (as a paused
 * Redis does after SIGCONT): `acquire` then calls `read` like a ledger that took the refresh lock.
 */
function pausable(inner: InProcessQuotaLedger, hung: ReadonlySet<Method>): QuotaLedger & { resume(): void; calls: Method[]; refused: unknown[] } {
  const waiting: Array<() => void> = [];
  const calls: Method[] = [];
  const refused: unknown[] = [];
  const gate = (m: Method): Promise<void> => (hung.has(m) ? new Promise<void>((r) => waiting.push(r)) : Promise.resolve());
  const wrap =
    (m: Method) =>
    async (...args: unknown[]): Promise<unknown> => {
      calls.push(m);
      await gate(m);
      return (inner as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[m]!.apply(inner, args);
    };
  return {
    kind: 'test',
    holder: inner.holder,
    scope: undefined,
    bindScope: () => undefined,
    placeTtlMs: 0,
    members: () => inner.members(),
    calls,
    refused,
    resume: () => {
      for (const r of waiting.splice(0)) r();
    },
    acquire: async (request, read, signal) => {
      calls.push('acquire');
      await gate('acquire');
      try {
        return await inner.acquire(request, read, signal);
      } catch (e) {
        refused.push(e);
        throw e;
      }
    },
    peek: wrap('peek') as QuotaLedger['peek'],
    leave: wrap('leave') as QuotaLedger['leave'],
    claimAnyway: wrap('claimAnyway') as QuotaLedger['claimAnyway'],
    renew: wrap('renew') as QuotaLedger['renew'],
    bind: wrap('bind') as QuotaLedger['bind'],
    release: wrap('release') as QuotaLedger['release'],
    publishFreed: wrap('publishFreed') as QuotaLedger['publishFreed'],
    keptSeen: () => undefined,
    onFreed: (l) => inner.onFreed(l),
    onWake: (p, l) => inner.onWake(p, l),
    callBudgetMs: () => undefined,
    probe: wrap('probe') as QuotaLedger['probe'],
    everReached: () => false,
    close: wrap('close') as QuotaLedger['close'],
  };
}

/** A FakeNova whose cores are all used (flavor '2' needs 2 of 2). */
async function fullNova(): Promise<Awaited<ReturnType<typeof startNova>>> {
  const nova = await startNova({ maxTotalCores: 2 });
  nova.addServer({ flavorId: '2' });
  return nova;
}

const ALL: ReadonlySet<Method> = new Set<Method>(['acquire', 'peek', 'leave', 'claimAnyway', 'renew', 'bind', 'release', 'publishFreed', 'probe']);

describe('a ledger that hangs', () => {
  it('an abandoned ledger acquire call never sends GET /limits after the call settled', async () => {
    const nova = await fullNova();
    const ledger = pausable(new InProcessQuotaLedger({ clock: clientFor(nova).clock }), new Set(['acquire']));
    const guard = guardFor(nova, { ledger, ledgerTimeoutMs: 300, maxWaitMs: 0 });
    const e = await settle(rejection(guard.createServer(body('late'))));
    expect(e).toBeInstanceOf(QuotaWaitTimeoutError);
    expect(Date.now() - T0).toBe(300);
    const settledReads = limitsReads(nova);
    expect(settledReads).toBe(1); // the fallback's read
    ledger.resume(); // the hung ledger answers now, and would read /limits for the call
    await settle(sleep(5000));
    expect(limitsReads(nova)).toBe(settledReads);
    expect(ledger.refused).toHaveLength(1);
    expect(ledger.refused[0]).toBeInstanceOf(AbortError);
  });

  it('maxWaitMs bounds a hung ledger call: QuotaWaitTimeoutError at maxWaitMs, not at ledgerTimeoutMs', async () => {
    const nova = await fullNova();
    const ledger = pausable(new InProcessQuotaLedger({ clock: clientFor(nova).clock }), ALL);
    const guard = guardFor(nova, { ledger, ledgerTimeoutMs: 2000, maxWaitMs: 500 });
    const e = await settle(rejection(guard.createServer(body('bounded'))));
    expect(e).toBeInstanceOf(QuotaWaitTimeoutError);
    expect(Date.now() - T0).toBe(500);
    expect((e as QuotaWaitTimeoutError).waitedMs).toBe(500);
    ledger.resume();
    const reads = limitsReads(nova);
    await settle(sleep(5000));
    expect(limitsReads(nova)).toBe(reads);
  });

  it("the caller's signal ends a hung ledger call at once: AbortError at the abort, not at ledgerTimeoutMs", async () => {
    const nova = await fullNova();
    const ledger = pausable(new InProcessQuotaLedger({ clock: clientFor(nova).clock }), ALL);
    const guard = guardFor(nova, { ledger, ledgerTimeoutMs: 2000, maxWaitMs: 60_000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const e = await settle(rejection(guard.createServer(body('aborted'), { signal: controller.signal })));
    expect(e).toBeInstanceOf(AbortError);
    expect(Date.now() - T0).toBe(100);
    expect(limitsReads(nova)).toBe(0);
    ledger.resume();
    await settle(sleep(5000));
    expect(limitsReads(nova)).toBe(0);
    expect(guard.inFlightClaims).toBe(0);
  });

  it('an abort during the backoff sleep settles at once although leave hangs; the place is left in the background', async () => {
    const nova = await fullNova();
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    const ledger = pausable(inner, new Set(['leave']));
    const guard = guardFor(nova, { ledger, ledgerTimeoutMs: 2000, maxWaitMs: 60_000, minDelayMs: 1000, baseDelayMs: 1000, maxDelayMs: 4000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 250);
    const e = await settle(rejection(guard.createServer(body('sleeping'), { signal: controller.signal })));
    expect(e).toBeInstanceOf(AbortError);
    expect(Date.now() - T0).toBe(250);
    expect(ledger.calls).toContain('acquire'); // short: it queued the call (joinIfShort)
    expect(ledger.calls).toContain('leave');
    // The place is still queued while leave hangs; once the ledger answers it is gone.
    const other = guardFor(nova, { ledger: inner, maxWaitMs: 0 });
    ledger.resume();
    await settle(sleep(10));
    nova.setQuota({ cores: 4 });
    const s = await settle(other.createServer(body('next')));
    expect(s.id).toBeDefined();
  });
});

describe('fencing token in the logs', () => {
  it('a lost claim is logged with its fencingToken (not redacted as a secret token)', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    let lose = true;
    const lines: string[] = [];
    const logger = pino({ level: 'warn', redact: { paths: ['token', '*.token'], censor: '[REDACTED]' } }, { write: (l: string) => lines.push(l) });
    const wrapped: QuotaLedger = {
      kind: 'test',
      holder: inner.holder,
      scope: undefined,
      bindScope: () => undefined,
      acquire: (r, read, s) => inner.acquire(r, read, s),
      peek: (r, s) => inner.peek(r, s),
      placeTtlMs: 0,
      members: () => inner.members(),
      leave: (p) => inner.leave(p),
      claimAnyway: (n, t) => inner.claimAnyway(n, t),
      renew: async (c, t) => {
        if (lose) {
          lose = false;
          return false;
        }
        return inner.renew(c, t);
      },
      bind: (c, s) => inner.bind(c, s),
      release: (c, e) => inner.release(c, e),
      publishFreed: (s) => inner.publishFreed(s),
      keptSeen: () => inner.keptSeen(),
      onFreed: (l) => inner.onFreed(l),
      onWake: (p, l) => inner.onWake(p, l),
      callBudgetMs: () => undefined,
      probe: () => inner.probe(),
      everReached: () => true,
      close: () => inner.close(),
    };
    const guard = guardFor(nova, { ledger: wrapped, logger, leaseTtlMs: 1000 });
    await settle(guard.createServer(body('fenced')));
    const lost = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => /claim lost before POST/.test(String(l.msg)));
    expect(lost?.fencingToken).toBe(1);
    expect(lost?.token).toBeUndefined();
  });
});
