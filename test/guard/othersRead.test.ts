// A ledger that waits for another holder's GET /limits (waitForOthersRead): the wait is Nova's time,
// so the guard's ledger time limit (ledgerTimeoutMs) pauses during it, as it does while the call's
// own read runs; only the call's maxWaitMs bounds it. Before, a slow Nova (another holder's read
// over ledgerTimeoutMs) made each waiter take the ledger for failed and read /limits itself.
// Fake timers, FakeNova adapters.
import { describe, expect, it } from 'vitest';
import { InProcessQuotaLedger } from '../../src/ledger/inProcess.js';
import { waitForOthersRead, type QuotaLedger } from '../../src/ledger/port.js';
import { QuotaWaitTimeoutError } from '../../src/guard/errors.js';
import { NovaNetworkError } from '../../src/errors/index.js';
import { T0, rejection, settle, useFakeClock } from '../helpers.js';
import { afterThisTest } from '../cleanup.js';
import { body, clientFor, guardFor, startNova } from './fixtures.js';

useFakeClock();

/**
 * The in-process ledger, whose `acquire` and `peek` first wait `waitMs` (Infinity: for ever) for "another
 * holder's read", through `waitForOthersRead` (`through: true`) or bare (as a ledger without it).
 */
function waitingLedger(inner: InProcessQuotaLedger, waitMs: number, through: boolean): QuotaLedger {
  const waitFor = async (read: Parameters<QuotaLedger['peek']>[0]): Promise<void> => {
    const wait = new Promise<void>((resolve) => {
      if (Number.isFinite(waitMs)) setTimeout(resolve, waitMs);
    });
    await (through ? waitForOthersRead(read, wait) : wait);
  };
  const acquire: QuotaLedger['acquire'] = async (request, read, signal) => {
    await waitFor(read);
    return inner.acquire(request, read, signal);
  };
  const peek: QuotaLedger['peek'] = async (read, signal) => {
    await waitFor(read);
    return inner.peek(read, signal);
  };
  return new Proxy(inner, {
    get(target, name) {
      if (name === 'acquire') return acquire;
      if (name === 'peek') return peek;
      if (name === 'kind') return 'waiting';
      const value: unknown = Reflect.get(target, name, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

describe("a ledger waiting for another holder's GET /limits", () => {
  it('a wait longer than ledgerTimeoutMs through waitForOthersRead is no ledger failure: no fallback, one read, the server made at once after it', async () => {
    const nova = await startNova({ maxTotalCores: 10, buildDelayMs: 0 });
    const ledger = waitingLedger(new InProcessQuotaLedger({ clock: clientFor(nova).clock }), 5000, true);
    const guard = guardFor(nova, { ledger, ledgerTimeoutMs: 2000, maxWaitMs: 60_000 });
    const server = await settle(guard.createServer(body('patient')));
    expect(server.id).toBeTruthy();
    expect(guard.stats.ledgerFallbacks).toBe(0);
    expect(nova.requestsTo('GET', '/limits')).toHaveLength(1);
    const post = nova.requestsTo('POST', '/servers')[0]!;
    expect(post.timeMs - T0).toBeGreaterThanOrEqual(5000);
    expect(post.timeMs - T0).toBeLessThan(5100);
  });

  it('the same wait awaited bare (a ledger without waitForOthersRead) is cut at ledgerTimeoutMs each time: the call never gets its server', async () => {
    const nova = await startNova({ maxTotalCores: 10, buildDelayMs: 0 });
    const ledger = waitingLedger(new InProcessQuotaLedger({ clock: clientFor(nova).clock }), 5000, false);
    const guard = guardFor(nova, { ledger, ledgerTimeoutMs: 2000, maxWaitMs: 20_000 });
    const e = await settle(rejection(guard.createServer(body('cut'))));
    expect(e).toBeInstanceOf(QuotaWaitTimeoutError);
    expect(guard.stats.ledgerFallbacks).toBeGreaterThanOrEqual(1);
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(0);
  });

  // Without a deadline (headroom(), maxWaitMs: Infinity) the pause once armed a timer of Infinity ms,
  // which a Node timer runs after 1 ms: the wait was cut at once, the call fell back to its
  // in-process ledger and read /limits itself (a second read for a slow Nova), with a
  // TimeoutOverflowWarning.
  it("headroom() (no deadline) waits for the other holder's read: no fallback, one read, answered after the wait", async () => {
    const nova = await startNova({ maxTotalCores: 10, buildDelayMs: 0 });
    const ledger = waitingLedger(new InProcessQuotaLedger({ clock: clientFor(nova).clock }), 5000, true);
    const guard = guardFor(nova, { ledger, ledgerTimeoutMs: 2000 });
    const room = await settle(guard.headroom());
    expect(room.cores.headroom).toBe(10);
    expect(guard.stats.ledgerFallbacks).toBe(0);
    expect(nova.requestsTo('GET', '/limits')).toHaveLength(1);
    expect(Date.now() - T0).toBeGreaterThanOrEqual(5000);
  });

  it("maxWaitMs: Infinity waits for the other holder's read too: no fallback, one read, the server made after it", async () => {
    const nova = await startNova({ maxTotalCores: 10, buildDelayMs: 0 });
    const ledger = waitingLedger(new InProcessQuotaLedger({ clock: clientFor(nova).clock }), 5000, true);
    const guard = guardFor(nova, { ledger, ledgerTimeoutMs: 2000, maxWaitMs: Number.POSITIVE_INFINITY });
    // Before: every admission was cut after 1 ms and the call waited for the ledger for ever.
    const stop = new AbortController();
    afterThisTest(() => stop.abort());
    const server = await settle(guard.createServer(body('no-deadline'), { signal: stop.signal }), 60_000);
    expect(server.id).toBeTruthy();
    expect(guard.stats.ledgerFallbacks).toBe(0);
    expect(nova.requestsTo('GET', '/limits')).toHaveLength(1);
    expect(nova.requestsTo('POST', '/servers')[0]!.timeMs - T0).toBeGreaterThanOrEqual(5000);
  });

  it("without a deadline a wait that never ends still fails, as the ledger's: after requestTimeoutMs + the budget, not at once", async () => {
    const nova = await startNova({ maxTotalCores: 10, buildDelayMs: 0 });
    const client = clientFor(nova);
    const ledger = waitingLedger(new InProcessQuotaLedger({ clock: client.clock }), Number.POSITIVE_INFINITY, true);
    const guard = guardFor(nova, { ledger, ledgerTimeoutMs: 2000 }, client);
    const room = await settle(guard.headroom());
    expect(room.cores.headroom).toBe(10);
    expect(guard.stats.ledgerFallbacks).toBe(1);
    expect(Date.now() - T0).toBeGreaterThanOrEqual(client.requestTimeoutMs + 2000);
    expect(Date.now() - T0).toBeLessThan(client.requestTimeoutMs + 2000 + 1000);
  });

  // Before: the call was cut at maxWaitMs, went to its in-process ledger and read /limits itself
  // there (one more read per waiter for a Nova already slow), only to give that claim back (degraded
  // mode's "wait for the ledger") and report the ledger out of reach, which it was not.
  it("maxWaitMs still bounds the wait: a wait that never ends settles at maxWaitMs as an unanswered GET /limits, with no read of its own and no fallback", async () => {
    const nova = await startNova({ maxTotalCores: 10, buildDelayMs: 0 });
    const ledger = waitingLedger(new InProcessQuotaLedger({ clock: clientFor(nova).clock }), Number.POSITIVE_INFINITY, true);
    const warnings: string[] = [];
    const guard = guardFor(nova, { ledger, ledgerTimeoutMs: 2000, maxWaitMs: 7000, onWarning: (w) => warnings.push(w) });
    const e = await settle(rejection(guard.createServer(body('bounded'))));
    expect(e).toBeInstanceOf(NovaNetworkError);
    expect(e).toMatchObject({ timedOut: true, method: 'GET' });
    expect(e.message).toMatch(/another holder's read/);
    expect(Date.now() - T0).toBeGreaterThanOrEqual(7000);
    expect(Date.now() - T0).toBeLessThan(8000);
    expect(nova.requestsTo('GET', '/limits')).toHaveLength(0);
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(0);
    expect(guard.stats.ledgerFallbacks).toBe(0);
    expect(warnings).toEqual([]);
  });

  it('a wait that begins with less than finalReadMs left of maxWaitMs gets finalReadMs, as the call\'s own read would', async () => {
    const nova = await startNova({ maxTotalCores: 10, buildDelayMs: 0 });
    const ledger = waitingLedger(new InProcessQuotaLedger({ clock: clientFor(nova).clock }), 4000, true);
    const guard = guardFor(nova, { ledger, ledgerTimeoutMs: 2000, maxWaitMs: 1000, finalReadMs: 5000 });
    const server = await settle(guard.createServer(body('final')));
    expect(server.id).toBeTruthy();
    expect(guard.stats.ledgerFallbacks).toBe(0);
    expect(nova.requestsTo('GET', '/limits')).toHaveLength(1);
  });
});
