/**
 * The time limit of the Nova reads a guarded call's admission makes (`GET /limits`, and the listing
 * of the servers Nova does not count yet that a ledger never vetted asks for): what is left of the
 * call's `maxWaitMs`, and at least `finalReadMs` (the read at the end of the wait, and every read with
 * `maxWaitMs: 0`). Without it a read that hangs held the call for the client's `requestTimeoutMs`
 * (30 s) per attempt, past `maxWaitMs`. The transport's time limit (`withTimeLimit`, p-timeout on the
 * client's clock): the read's AbortSignal (axios `signal`) is aborted when the limit passes, so no
 * request of the call is left running, and the call rejects with a {@link NovaNetworkError}
 * (`timedOut`, code `ETIMEDOUT`) naming the deadline. A
 * guarded call's wait for headroom thus ends by `maxWaitMs + finalReadMs` (plus the ledger's own
 * budget for a step at the end: `callLedger.ts`).
 *
 * @module
 */
import { NovaNetworkError } from '../errors/index.js';
import { withTimeLimit } from '../transport/timeLimit.js';
import type { GuardedCall } from './guardedCall.js';
import type { GuardState } from './state.js';

/** The limit of a read the call starts now, in ms: what is left of `maxWaitMs`, at least `finalReadMs` (`Infinity`: no limit). */
export function readLimitMs(g: GuardState, call: GuardedCall): number {
  return Math.ceil(Math.max(call.remainingMs(), g.opts.finalReadMs));
}

/**
 * `read` (one Nova read of the call's admission, `what` naming it: `'GET /limits'`), bounded by
 * {@link readLimitMs} and `signal`: past the limit, or when `signal` aborts, its signal aborts (the
 * request ends) and this rejects at once.
 * @throws {@link NovaNetworkError} (`timedOut`) when the limit passes; `AbortError` when `signal`
 * aborts; what `read` throws otherwise.
 */
export function withinCallDeadline<T>(g: GuardState, call: GuardedCall, what: string, read: (signal: AbortSignal) => Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  const limitMs = readLimitMs(g, call);
  const [method, path] = what.split(' ');
  return withTimeLimit(g.clock, limitMs, signal, read, () =>
    new NovaNetworkError({
      status: 0,
      code: 'ETIMEDOUT',
      timedOut: true,
      method,
      url: path,
      message: `${what} timed out at the guarded call's deadline (no answer within ${limitMs} ms; maxWaitMs ${g.opts.maxWaitMs} ms, finalReadMs ${g.opts.finalReadMs} ms)`,
    }),
  );
}
