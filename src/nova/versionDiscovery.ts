/**
 * One read of Nova's version document per client, shared by every caller (see `microversion.ts`).
 *
 * - Read once: the first caller that needs the microversion starts one `GET` of the document (one
 *   attempt, bounded by half the client's `requestTimeoutMs`, at most {@link VERSION_READ_MAX_MS});
 *   callers that come meanwhile wait for that same read; once read, the answer is kept (a Nova's
 *   range only changes with an upgrade, and then an older microversion still works) until Nova
 *   refuses it with a 406 ({@link VersionDiscovery.notAccepted}).
 * - Each caller waits within its own share of its time ({@link versionWaitMs}: half of what is
 *   left of its time limit, at most {@link VERSION_READ_MAX_MS}) and under its own signal: when its
 *   share passes first it goes on at the base microversion (2.1) with the rest of its time, and the
 *   read counts as failed; its abort ends its wait (an AbortError), never another caller's.
 * - A failed read (no answer in time, a 5xx, a 200 that is not a version document: an HTML page,
 *   `{}`, a version that is not `2.<minor>`) is not kept for ever: for {@link VERSION_REREAD_MS}
 *   every caller goes on at the base microversion (2.1) without asking again, as openstacksdk does
 *   when discovery fails; the next caller after that reads again. When every caller waiting for a
 *   read has left, the read is aborted (nothing runs for nobody) and counts as failed too.
 * - Whatever happens, the document is read at most once per {@link VERSION_REREAD_MS} per client: a
 *   slow or failing Nova gets at most one extra request a minute, never one per call.
 *
 * @module
 */
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import { AbortError, InvalidResponseError, NovaNetworkError } from '../errors/index.js';
import { withTimeLimit } from '../transport/timeLimit.js';
import { classifyVersionDocument, pickMicroversion, rangeOf406, type MicroversionRange } from './microversion.js';

/** How long after a failed read of the version document callers go on at the base microversion before it is read again, in ms; also the least time between two reads. */
export const VERSION_REREAD_MS = 60_000;

/** The longest a read of the version document runs, and the longest a caller waits for it, in ms. */
export const VERSION_READ_MAX_MS = 5000;

/**
 * How long a caller with `leftMs` of its time limit left waits for the version document, in ms:
 * half of it, at most {@link VERSION_READ_MAX_MS}; the request itself gets the rest.
 */
export function versionWaitMs(leftMs: number): number {
  return Math.max(0, Math.min(leftMs / 2, VERSION_READ_MAX_MS));
}

/** What a caller learns of Nova's microversions. */
export type Discovery =
  /** The document was read: `version` is the microversion both know, undefined when there is none (Nova older than microversions, or its minimum above the client's maximum). */
  | { read: true; range: MicroversionRange | undefined; version: string | undefined }
  /** The document could not be read (now, or within the last {@link VERSION_REREAD_MS}): `error` says why. */
  | { read: false; error: Error };

/** What a {@link VersionDiscovery} works with. */
export interface VersionDiscoveryInit {
  /** One bounded `GET` of the version document: its body, or a rejection. */
  read: (signal: AbortSignal) => Promise<unknown>;
  clock: Clock;
  logger: Logger;
  /** The client's highest microversion. */
  clientMax: string;
}

interface Flight {
  readonly promise: Promise<Discovery>;
  readonly controller: AbortController;
  waiters: number;
  settled: boolean;
}

/** See the module. */
export class VersionDiscovery {
  readonly #init: VersionDiscoveryInit;
  #known: Extract<Discovery, { read: true }> | undefined;
  #failed: { error: Error; atMs: number } | undefined;
  #flight: Flight | undefined;
  /** When (clock ms) the last read began. */
  #lastReadAtMs: number | undefined;

  constructor(init: VersionDiscoveryInit) {
    this.#init = init;
  }

  /** What is known without asking: the document as read, or undefined. */
  get known(): Extract<Discovery, { read: true }> | undefined {
    return this.#known;
  }

  /**
   * The document's answer: kept, or the failure of a read within the last {@link VERSION_REREAD_MS},
   * or that of one read now (shared with the callers waiting for it), waited for at most `waitMs`
   * (see {@link versionWaitMs}): when that passes first, a failed read (the caller goes on at 2.1).
   * @throws {@link AbortError} when `signal` aborts first.
   */
  async resolve(signal?: AbortSignal, waitMs: number = Number.POSITIVE_INFINITY): Promise<Discovery> {
    if (this.#known) return this.#known;
    const { clock } = this.#init;
    if (this.#failed && clock.now() - this.#failed.atMs < VERSION_REREAD_MS) return { read: false, error: this.#failed.error };
    if (signal?.aborted) throw new AbortError(undefined, { cause: signal.reason });
    const flight = (this.#flight ??= this.#start());
    flight.waiters++;
    let gaveUp: Error | undefined;
    try {
      return await withTimeLimit(clock, waitMs, signal, (s) => waitFor(flight.promise, s), () => {
        gaveUp = new NovaNetworkError({
          status: 0,
          code: 'ETIMEDOUT',
          timedOut: true,
          method: 'GET',
          message: `the compute version document was not read within ${Math.round(waitMs)} ms (the call's share of its time limit)`,
        });
        return gaveUp;
      });
    } catch (error) {
      if (gaveUp === undefined || error !== gaveUp) throw error;
      // The caller's share of its time passed: it goes on at 2.1 and the read counts as failed, so
      // that the next callers do not wait for it too (nor read it again) for a minute.
      if (!this.#known) {
        this.#failed = { error: gaveUp, atMs: clock.now() };
        this.#init.logger.warn({ waitMs }, `compute version document not read in time: requests go at microversion 2.1 for ${VERSION_REREAD_MS / 1000} s, then it is read again`);
      }
      return this.#known ?? { read: false, error: gaveUp };
    } finally {
      flight.waiters--;
      if (flight.waiters === 0 && this.#flight === flight && !flight.settled) {
        // Nobody waits any more (their deadlines or aborts came first): the read stops, and counts as
        // a failed one, so that a Nova too slow to answer it is not asked again by every next call.
        this.#flight = undefined;
        const error = new AbortError('the compute version document was not read: every caller waiting for it ended first');
        if (gaveUp === undefined) this.#failed = { error, atMs: this.#init.clock.now() };
        flight.controller.abort(error);
      }
    }
  }

  /**
   * Nova refused `version`, the negotiated microversion, with a 406 (`message`): forget it. When
   * the 406 states Nova's range (`Minimum is 2.1 and maximum is 2.79.`) the highest both know of
   * it is kept at once (no request); otherwise the document is read again by the next caller, but
   * not sooner than {@link VERSION_REREAD_MS} after the last read (calls go at 2.1 meanwhile).
   * @returns whether a request refused at `version` is worth sending again: what calls go at changed.
   */
  notAccepted(version: string, message: string): boolean {
    const known = this.#known;
    if (known?.version !== version) return true; // another caller's 406 changed it already
    const { clock, logger, clientMax } = this.#init;
    const range = rangeOf406(message);
    const picked = pickMicroversion(range, clientMax);
    if (range !== undefined && picked !== undefined) {
      if (picked === version) return false;
      this.#known = { read: true, range, version: picked };
      logger.warn({ refused: version, microversion: picked, min: range.min, max: range.max }, 'Nova refused the negotiated compute microversion (406): going at the highest of its stated range');
      return true;
    }
    this.#known = undefined;
    const error = new AbortError(`Nova refused the negotiated compute microversion ${version} (406)`);
    this.#failed = { error, atMs: this.#lastReadAtMs ?? clock.now() };
    logger.warn({ refused: version }, 'Nova refused the negotiated compute microversion (406): requests go at 2.1 until its version document is read again');
    return true;
  }

  #start(): Flight {
    const controller = new AbortController();
    const { clock, logger, clientMax } = this.#init;
    this.#lastReadAtMs = clock.now();
    const failed = (e: Error): Discovery => {
      if (!controller.signal.aborted) {
        this.#failed = { error: e, atMs: clock.now() };
        logger.warn({ err: e.message }, `compute version document not read: requests go at microversion 2.1 for ${VERSION_REREAD_MS / 1000} s, then it is read again`);
      }
      return { read: false, error: e };
    };
    const promise = this.#init.read(controller.signal).then(
      (data): Discovery => {
        const doc = classifyVersionDocument(data, clientMax);
        // A 200 that is no version document (a proxy's page, `{}`) is a failed read: read again in a minute.
        if (doc.kind === 'invalid') return failed(new InvalidResponseError({ status: 200, method: 'GET', message: `the compute version document could not be read: ${doc.why}` }));
        const range = doc.kind === 'range' ? doc.range : undefined;
        const known = { read: true as const, range, version: pickMicroversion(range, clientMax) };
        this.#known = known;
        this.#failed = undefined;
        logger.debug({ min: range?.min, max: range?.max, microversion: known.version }, 'compute version document read');
        return known;
      },
      (error: unknown): Discovery => failed(error instanceof Error ? error : new Error(String(error))),
    );
    const flight: Flight = { promise, controller, waiters: 0, settled: false };
    void promise.finally(() => {
      flight.settled = true;
      if (this.#flight === flight) this.#flight = undefined;
    });
    return flight;
  }
}

/** `promise`, or an {@link AbortError} as soon as `signal` aborts (its listener removed either way). */
function waitFor<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new AbortError(undefined, { cause: signal.reason }));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e as Error);
      },
    );
  });
}
