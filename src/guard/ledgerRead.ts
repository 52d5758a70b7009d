/**
 * The ledger calls that read `GET /limits` through the ledger (`limits`, `acquire`): bounded in
 * time, without counting the time Nova takes to answer, and gated so that no `GET /limits` reaches
 * Nova for a call that has settled.
 *
 * @module
 */
import pTimeout, { TimeoutError } from 'p-timeout';
import type { Clock } from '../core/clock.js';
import type { AbsoluteLimits, ResourceAmounts } from '../core/types.js';
import { AbortError, throwIfAborted } from '../errors/index.js';
import type { Acquisition, LedgerLimits, LimitsReading, QuotaLedger, UncountedRead } from './ledger.js';
import { inBackground, ledgerBudgetMs, ledgerLimitMs, moveToFallback, noteFallback, skipDown } from './ledgerUse.js';
import type { GuardState, GuardedCall } from './state.js';

/** A read of `GET /limits` as the ledger calls it. */
export type LimitsRead = (signal: AbortSignal | undefined) => Promise<{ absolute: AbsoluteLimits; requestId: string | undefined }>;

/**
 * `run(ledger, read, signal)` on the call's ledger, where `run` may call `read` (a `GET /limits`).
 * The time limit ({@link ledgerLimitMs}) counts the ledger's own work, not the time Nova takes to
 * answer `read`; an error of `read` itself (Nova's) is thrown as it is, never taken for a ledger
 * failure. `signal` aborting ends the wait at once.
 *
 * The `read` the ledger gets is gated: once this function has settled (the answer came, the
 * ledger was abandoned for the fallback, or the call aborted), a late `read` by the abandoned
 * ledger call is refused with an {@link AbortError} before any request: no `GET /limits` ever
 * reaches Nova for a call that has settled. `uncounted` (a listing of the servers Nova does not
 * count yet, for `acquire`) is gated and paused out of the limit the same way, and its errors are
 * thrown as Nova's too. A ledger that is down (the wrapper's verdict) or fails
 * resolves `undefined`: the call has moved to the fallback ledger. `undo` gives back what a late
 * answer took (a claim, a place), in the background.
 */
export async function throughLedger<T>(
  g: GuardState,
  call: GuardedCall | undefined,
  what: string,
  run: (ledger: QuotaLedger, read: LimitsRead, signal: AbortSignal | undefined, uncounted: UncountedRead | undefined) => Promise<T>,
  read: LimitsRead,
  signal: AbortSignal | undefined,
  undo?: (ledger: QuotaLedger, late: T) => Promise<void>,
  uncounted?: UncountedRead,
): Promise<{ value: T; ledger: QuotaLedger } | undefined> {
  const ledger = call?.ledger ?? g.ledger;
  throwIfAborted(signal);
  if (skipDown(g, call)) return undefined;
  let readFailure: { error: unknown } | undefined;
  const gate = new AbortController();
  const late = new AbortController();
  const onAbort = (): void => late.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  let timer: ReturnType<Clock['setTimeout']> | undefined;
  let limitMs = ledgerLimitMs(g, call);
  const arm = (): void => {
    g.clock.clearTimeout(timer);
    limitMs = ledgerLimitMs(g, call);
    const ms = limitMs;
    timer = g.clock.setTimeout(() => late.abort(new TimeoutError(`ledger ${what} took longer than ${ms} ms`)), ms);
  };
  // A Nova request the ledger makes (`read`, `uncounted`): gated, and its time paused out of the limit.
  const timed =
    <R>(fn: (s: AbortSignal) => Promise<R>, what: string) =>
    async (s: AbortSignal | undefined): Promise<R> => {
      if (gate.signal.aborted) throw new AbortError(`the ledger call was abandoned: no ${what} for it`, { cause: gate.signal.reason });
      g.clock.clearTimeout(timer);
      try {
        return await fn(s === undefined ? gate.signal : AbortSignal.any([s, gate.signal]));
      } catch (e) {
        readFailure = { error: e };
        throw e;
      } finally {
        if (!gate.signal.aborted) arm();
      }
    };
  const timedRead = timed<{ absolute: AbsoluteLimits; requestId: string | undefined }>(read, 'GET /limits');
  const timedUncounted = uncounted === undefined ? undefined : timed(uncounted, 'listing');
  arm();
  let p: Promise<T> | undefined;
  try {
    try {
      p = run(ledger, timedRead, signal === undefined ? gate.signal : AbortSignal.any([signal, gate.signal]), timedUncounted);
    } catch (e) {
      p = Promise.reject(e);
    }
    // p-timeout without its own limit: the limit is `late`, paused while Nova answers.
    const value = await pTimeout(p, { milliseconds: Number.POSITIVE_INFINITY, signal: late.signal });
    g.res.succeeded(g);
    return { value, ledger };
  } catch (e) {
    if (readFailure) throw readFailure.error;
    throwIfAborted(signal);
    gate.abort(new Error('abandoned for the fallback ledger'));
    if (undo && p) p.then((v) => inBackground(g, ledger, `undo ${what}`, () => undo(ledger, v))).catch(() => undefined);
    g.res.failed(g, e, e instanceof TimeoutError && limitMs >= ledgerBudgetMs(g));
    noteFallback(g, ledger, what, e);
    if (call) moveToFallback(g, call);
    return undefined;
  } finally {
    gate.abort(new Error('the guarded call is past this reading'));
    g.clock.clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * A `/limits` reading through the call's ledger ({@link throughLedger}), or through the fallback
 * ledger when the call's ledger is the fallback, is down or fails.
 */
export async function readThroughLedger(g: GuardState, call: GuardedCall | undefined, read: LimitsRead, signal: AbortSignal | undefined): Promise<{ reading: LedgerLimits; ledger: QuotaLedger }> {
  const ledger = call?.ledger ?? g.ledger;
  if (ledger !== g.fallback) {
    const r = await throughLedger(g, call, 'limits', (l, rd, s) => l.limits(rd, s), read, signal);
    if (r) return { reading: r.value, ledger: r.ledger };
  }
  return { reading: await g.fallback.limits(read, signal), ledger: g.fallback };
}

/**
 * One admission in one call of the ledger (`acquire`: the reading, the check and claim, and a place
 * in the queue when short), when the call's ledger has `acquire` and is not the fallback;
 * `undefined` otherwise or when it failed (the call then goes on with the fallback). A late answer
 * gives back its claim and place. `uncounted`: see `QuotaLedger.acquire`.
 */
export async function acquireThroughLedger(
  g: GuardState,
  call: GuardedCall,
  needs: ResourceAmounts,
  read: LimitsRead,
  signal: AbortSignal | undefined,
  uncounted?: UncountedRead,
): Promise<{ value: Acquisition; ledger: QuotaLedger } | undefined> {
  const ledger = call.ledger;
  if (ledger === g.fallback || typeof ledger.acquire !== 'function') return undefined;
  const place = call.place?.ledger === ledger ? call.place.place : undefined;
  return throughLedger(
    g,
    call,
    'acquire',
    (l, rd, s, u) => l.acquire!({ place, needs, ttlMs: g.opts.leaseTtlMs, joinIfShort: true }, rd as (s: AbortSignal | undefined) => Promise<LimitsReading>, s, u),
    read,
    signal,
    async (l, late) => {
      if (late.admitted) await l.release(late.claim, 'not-created');
      if (late.place && late.place !== place) await l.leave(late.place);
    },
    uncounted,
  );
}
