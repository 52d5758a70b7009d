/**
 * The check of a 404 that contradicts what the delete engine knows: one brief `GET /servers` (Nova API
 * reference, "List Servers"; at microversion 2.69 or later, so a server of an unreachable cell is
 * listed, not left out), shared by every caller that asks while it runs. A server Nova answers 404 for
 * and still lists has an orphaned instance mapping (its cell is lost): Nova keeps counting it and its
 * deletion cannot end, so no delete function answers `deleted` or `already-gone` for it. A 404 the
 * check could not check (the listing failed) is not taken as "gone" either: the check is repeated
 * until it succeeds or the caller's deadline passes (then the caller's wait ends as a timeout and the
 * server stays unconfirmed).
 *
 * The listing is sent under the engine's rate limit and bounded by the client's `requestTimeoutMs`;
 * it is aborted when every caller waiting for it has gone (nothing is left running after a call).
 *
 * @module
 */
import { AbortGroups } from '../core/abortGroups.js';
import { AbortError, NovaApiError, OrphanedServerError } from '../errors/index.js';
import { withRetry } from '../transport/retry.js';
import { listIds } from './observe.js';
import type { ServerApi } from './types.js';
import { ORPHAN_EVIDENCE } from './evidence.js';

/** What the check needs of its engine. */
export interface PresenceCheckDeps {
  api: ServerApi;
  send: <T>(fn: () => Promise<T>, signal: AbortSignal) => Promise<T>;
  /** The brief listing's microversion (undefined: the client's own). */
  microversion: () => string | undefined;
  /** Count one brief listing sent. */
  counted: () => void;
  /**
   * Nova answered 406 to the brief listing at {@link PresenceCheckDeps.microversion} (a Nova older
   * than 2.69): list at the client's own microversion from now on (`ListingPolicy.presenceUnsupported`).
   */
  unsupported: () => void;
}

interface Shared {
  promise: Promise<ReadonlySet<string>>;
  controller: AbortController;
  users: number;
}

/** Longest pause between two listings that check one 404, in ms. */
const MAX_CHECK_DELAY_MS = 30_000;


/** One shared brief listing at a time. */
export class PresenceCheck {
  readonly #d: PresenceCheckDeps;
  #shared: Shared | undefined;
  /**
   * One abort listener per caller's signal: the 404s of one tick all ask under the tick's signal
   * (a listener each passed Node's limit of 10 and printed a `MaxListenersExceededWarning`).
   */
  readonly #aborts = new AbortGroups<() => void>((onAbort) => onAbort());

  constructor(deps: PresenceCheckDeps) {
    this.#d = deps;
  }

  /**
   * The ids Nova lists now. Rejects with {@link AbortError} as soon as `signal` aborts, or with the
   * listing's failure.
   */
  listed(signal: AbortSignal): Promise<ReadonlySet<string>> {
    if (signal.aborted) return Promise.reject(new AbortError(undefined, { cause: signal.reason }));
    let shared = this.#shared;
    if (!shared) {
      const controller = new AbortController();
      const s: Shared = { controller, users: 0, promise: Promise.resolve(new Set<string>()) };
      s.promise = this.#list(controller.signal)
        .finally(() => {
          if (this.#shared === s) this.#shared = undefined;
        });
      s.promise.catch(() => undefined); // every caller may have gone before it settles
      shared = this.#shared = s;
    }
    const s = shared;
    s.users++;
    return new Promise<ReadonlySet<string>>((resolve, reject) => {
      let left = false;
      const leave = (aborted: boolean): void => {
        if (left) return;
        left = true;
        this.#aborts.remove(signal, onAbort);
        s.users--;
        // The last caller gone before the answer: the listing stops.
        if (aborted && s.users === 0 && this.#shared === s) {
          this.#shared = undefined;
          s.controller.abort(new Error('no caller left'));
        }
      };
      const onAbort = (): void => {
        leave(true);
        reject(new AbortError(undefined, { cause: signal.reason }));
      };
      this.#aborts.add(signal, onAbort);
      s.promise.then(
        (ids) => {
          if (left) return;
          leave(false);
          resolve(ids);
        },
        (e: unknown) => {
          if (left) return;
          leave(false);
          reject(e instanceof Error ? e : new Error(String(e)));
        },
      );
    });
  }

  /**
   * One brief listing at the check's microversion. A 406 to it (a Nova older than 2.69, which the
   * check may meet before any other brief listing does: a single wait, a DELETE answered 404) is no
   * failed check: the engine lists at the client's own microversion from now on, and this check is
   * sent again at once at that one. Before, the check was sent at 2.69 again and again, each time
   * refused: a 404 it had to check was never confirmed (the wait ended as a timeout on a server
   * really gone), at one more refused request each look.
   */
  async #list(signal: AbortSignal): Promise<ReadonlySet<string>> {
    const once = (microversion: string | undefined): Promise<ReadonlySet<string>> =>
      this.#d
        .send(() => {
          this.#d.counted();
          return listIds(this.#d.api, signal, this.#d.api.requestTimeoutMs, microversion);
        }, signal)
        .then((r) => r.ids);
    const microversion = this.#d.microversion();
    try {
      return await once(microversion);
    } catch (error) {
      if (microversion === undefined || !(error instanceof NovaApiError) || error.status !== 406) throw error;
      this.#d.unsupported();
      return once(undefined);
    }
  }

  /**
   * After Nova's 404 for `serverId` (its DELETE or GET, before any look showed it): resolves only when a
   * successful listing does not show it. A listing that fails (5xx, no answer, a garbled body, any
   * error) confirms nothing: `onCheckFailed` is told and the listing is sent again after p-retry's
   * backoff (from `minDelayMs`, doubling up to 30 s, Nova's `Retry-After` waited out), until `signal`
   * aborts (the caller's deadline): an unchecked 404 is never taken as "gone".
   * @throws {@link OrphanedServerError} when a listing still shows it; {@link AbortError} when `signal` aborts.
   */
  async confirmGone(serverId: string, signal: AbortSignal, deleteAttempts: number, onCheckFailed: (error: unknown) => void, minDelayMs = 1000): Promise<void> {
    const ids = await withRetry(() => this.listed(signal), {
      retries: Number.POSITIVE_INFINITY,
      minDelayMs,
      maxDelayMs: Math.max(minDelayMs, MAX_CHECK_DELAY_MS),
      maxRetryTimeMs: Number.POSITIVE_INFINITY,
      shouldRetry: (e) => !(e instanceof AbortError) && !signal.aborted,
      onRetry: (e) => onCheckFailed(e),
      signal,
      clock: this.#d.api.clock,
    });
    if (ids.has(serverId)) throw new OrphanedServerError({ serverId, deleteAttempts, evidence: ORPHAN_EVIDENCE });
  }
}
