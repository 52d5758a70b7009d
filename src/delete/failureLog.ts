/**
 * The failures of one delete or one wait, as they happen: counted by kind (DELETE, look, auth), the
 * last error of each kind kept, so that a timeout or a failure can say what went wrong on the way
 * (`DeleteTimeoutError.failures`, `WaitForDeleteResult.failures`) and a caller can be told of each
 * failure as it comes (`onFailure`).
 *
 * @module
 */
import { AuthError, NovaApiError, NovaNetworkError, isAbortError, type FailureKind, type FailureSummary } from '../errors/index.js';
import type { Logger } from '../core/logger.js';
import { failureWords } from '../errors/delete.js';

/** What `onFailure` receives: one failed request on the way of a delete or a wait. */
export interface DeleteFailureNotice {
  serverId: string;
  /** What the request was for: `delete` (DELETE, force-delete), `look` (GET, listing), `auth` (401, Keystone). */
  kind: FailureKind;
  /** The error of that request. */
  error: Error;
  /** Failed requests of this kind so far, this one included. */
  count: number;
}

/** What a request of `kind` was, in words: `DELETE`, `authentication`, `look at the server`. */
export function failureKindWords(kind: FailureKind): string {
  return kind === 'delete' ? 'DELETE' : kind === 'auth' ? 'authentication' : 'look at the server';
}

/** The kind of a failure: `auth` for a 401 or a failure to reach Keystone, else the kind of the request. */
function kindOf(error: unknown, requested: FailureKind): FailureKind {
  if (error instanceof AuthError) return 'auth';
  if (error instanceof NovaApiError && error.message.startsWith('Keystone ')) return 'auth';
  return requested;
}

/** A failure's signature: `net:<code>` without a response, `http:<status>` with one. */
function signature(error: Error): string {
  if (error instanceof NovaNetworkError) return `net:${error.timedOut ? 'timeout' : (error.code ?? error.message)}`;
  if (error instanceof NovaApiError) return `http:${error.status}`;
  return `other:${error.name}`;
}

/** The failures of one delete or wait (see the module). */
export class FailureLog {
  readonly #counts: Record<FailureKind, number> = { delete: 0, look: 0, auth: 0 };
  readonly #lastError: Partial<Record<FailureKind, Error>> = {};
  #first: Error | undefined;
  #last: Error | undefined;
  #answered = 0;
  #signature: string | undefined | null = null;
  readonly #serverId: string;
  readonly #listener: ((notice: DeleteFailureNotice) => void) | undefined;
  readonly #logger: Logger | undefined;

  /**
   * @param listener - Told of each failure (its exceptions ignored).
   * @param logger - Gets one warning for the first failure of each kind (later ones are counted, and
   *   logged at debug by the transport): a logger at its default level hears of a refused connection
   *   when it happens, not only at the timeout.
   */
  constructor(serverId: string, listener?: (notice: DeleteFailureNotice) => void, logger?: Logger) {
    this.#serverId = serverId;
    this.#listener = listener;
    this.#logger = logger;
  }

  /** A request of `kind` failed with `error` (an abort is not a failure and is not recorded). */
  note(kind: FailureKind, error: unknown): void {
    if (isAbortError(error)) return;
    const e = error instanceof Error ? error : new Error(String(error));
    const k = kindOf(e, kind);
    this.#counts[k]++;
    this.#lastError[k] = e;
    this.#first ??= e;
    this.#last = e;
    const sig = signature(e);
    this.#signature = this.#signature === null ? sig : this.#signature === sig ? sig : undefined;
    if (this.#counts[k] === 1) {
      const words = failureWords(e);
      this.#logger?.warn({ serverId: this.#serverId, kind: k, err: words }, `a ${failureKindWords(k)} failed (${words}); still trying until the call's timeout`);
    }
    try {
      this.#listener?.({ serverId: this.#serverId, kind: k, error: e, count: this.#counts[k] });
    } catch {
      // a callback must not break the delete
    }
  }

  /** A request got Nova's answer. */
  answered(): void {
    this.#answered++;
  }

  /** Failures recorded so far. */
  get failed(): number {
    return this.#counts.delete + this.#counts.look + this.#counts.auth;
  }

  /** The summary, or undefined when nothing failed. `others` (another log's summaries) are added in. */
  summary(...others: Array<FailureSummary | undefined>): FailureSummary | undefined {
    const own: FailureSummary | undefined =
      this.failed === 0
        ? undefined
        : {
            counts: { ...this.#counts },
            lastError: { ...this.#lastError },
            first: this.#first,
            last: this.#last,
            answered: this.#answered,
            sameEvery: this.#signature ?? undefined,
          };
    return mergeSummaries(own, ...others);
  }
}

/** Summaries added together (the first one's `first`, the latest given one's `last`); undefined when all are. */
export function mergeSummaries(...all: Array<FailureSummary | undefined>): FailureSummary | undefined {
  const present = all.filter((s): s is FailureSummary => s !== undefined);
  if (present.length <= 1) return present[0];
  const counts = { delete: 0, look: 0, auth: 0 };
  const lastError: Partial<Record<FailureKind, Error>> = {};
  for (const s of present) {
    for (const k of ['delete', 'look', 'auth'] as const) {
      counts[k] += s.counts[k];
      lastError[k] = s.lastError[k] ?? lastError[k];
    }
  }
  const sigs = new Set(present.map((s) => s.sameEvery));
  return {
    counts,
    lastError,
    first: present[0]!.first,
    last: present.at(-1)!.last,
    answered: present.reduce((n, s) => n + s.answered, 0),
    sameEvery: sigs.size === 1 ? present[0]!.sameEvery : undefined,
  };
}
