/**
 * One project listing for the shortfall checks of every waiting call of a client (option
 * `explainShortfall`, `explain.ts`): without it, each waiting call listed the whole project
 * (`GET /servers/detail`, about 1.5 KB per server) on every `EXPLAIN_EVERY_WAITS`th wait, and in a
 * fleet whose quota binds all day those listings were most of the bytes Nova sent.
 *
 * The rules, per `NovaClient` (every guard of the client shares its `projectListing`):
 * - a call takes the newest listing of the client when it was sent at or after the call's `/limits`
 *   reading was answered (in flight or answered: the evidence is that of a listing of its own,
 *   which would also come after the reading);
 * - otherwise the check on a wait ({@link EXPLAIN_EVERY_WAITS}) sends a listing only when none is in
 *   flight and none was sent in the last {@link EXPLAIN_MIN_INTERVAL_MS}: else that wait goes
 *   without a check (`shortfallCause` undefined);
 * - the check of a wait that ran out (the `QuotaWaitTimeoutError`) waits for the listing in flight
 *   and sends the next, shared by every call that waits for it: at most one listing in flight per
 *   client.
 *
 * So a client sends at most one listing per `EXPLAIN_MIN_INTERVAL_MS` for the checks on waits,
 * however many calls wait, plus at most one at a time for the waits that run out.
 *
 * @module
 */
import type { Server } from '../core/types.js';
import { throwIfAborted } from '../errors/index.js';
import type { NovaClient } from '../nova/index.js';

/** The least time between two listings of one client for the checks on waits, in ms. */
export const EXPLAIN_MIN_INTERVAL_MS = 60_000;

/** `p`, or a rejection with `signal.reason` as soon as `signal` aborts (`p` goes on for the others). */
async function orAbort<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  throwIfAborted(signal);
  let off = (): void => undefined;
  const aborted = new Promise<never>((_resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    off = () => signal.removeEventListener('abort', onAbort);
  });
  try {
    return await Promise.race([p, aborted]);
  } finally {
    off();
  }
}

/**
 * The project's servers for a shortfall check of a reading answered at `readAtMs` (the client's
 * clock), by the rules of the module description; `undefined` when a check on a wait goes
 * without (`final` false).
 * @throws the listing's errors; {@link AbortError} when `signal` aborts.
 */
export async function serversForCheck(client: NovaClient, readAtMs: number, final: boolean, signal: AbortSignal | undefined): Promise<readonly Server[] | undefined> {
  for (;;) {
    const l = client.projectListing.newest();
    if (l && l.sentAtMs >= readAtMs) return orAbort(l.servers, signal);
    if (l && !l.settled) {
      if (!final) return undefined;
      await orAbort(
        l.servers.catch(() => undefined),
        signal,
      );
      continue;
    }
    if (!final && l && client.clock.now() - l.sentAtMs < EXPLAIN_MIN_INTERVAL_MS) return undefined;
    client.projectListing.send();
  }
}
