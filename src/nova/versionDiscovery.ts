/**
 * One read of Nova's version document per client, shared by every caller (see `microversion.ts`).
 *
 * - Read once: the first caller that needs the microversion starts one `GET` of the document (one
 *   attempt, bounded by half the client's `requestTimeoutMs`, at most 30 s); callers that come meanwhile wait for that
 *   same read; once read, the answer is kept for the client's life (a Nova's range only changes with
 *   an upgrade, and then an older microversion still works).
 * - A failed read (no answer, a 5xx, a page that is not a version document) is not kept for ever:
 *   for {@link VERSION_REREAD_MS} every caller goes on at the base microversion (2.1) without
 *   asking again, as openstacksdk does when discovery fails; the next caller after that reads again.
 *   A failing Nova thus gets at most one extra request a minute, never one per call.
 * - Each caller waits under its own signal: its abort ends its wait, never another caller's; when
 *   every caller waiting for a read has left (their time limits or aborts came first), the read is
 *   aborted (nothing runs for nobody) and counts as a failed read: a Nova too slow to answer it is
 *   not asked again by each next call.
 *
 * @module
 */
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import { AbortError } from '../errors/index.js';
import { pickMicroversion, parseVersionDocument, type MicroversionRange } from './microversion.js';

/** How long after a failed read of the version document callers go on at the base microversion before it is read again, in ms. */
export const VERSION_REREAD_MS = 60_000;

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
}

/** See the module. */
export class VersionDiscovery {
  readonly #init: VersionDiscoveryInit;
  #known: Extract<Discovery, { read: true }> | undefined;
  #failed: { error: Error; atMs: number } | undefined;
  #flight: Flight | undefined;

  constructor(init: VersionDiscoveryInit) {
    this.#init = init;
  }

  /** What is known without asking: the document as read, or undefined. */
  get known(): Extract<Discovery, { read: true }> | undefined {
    return this.#known;
  }

  /**
   * The document's answer: kept, or the failure of a read within the last {@link VERSION_REREAD_MS},
   * or that of one read now (shared with the callers waiting for it).
   * @throws {@link AbortError} when `signal` aborts first.
   */
  async resolve(signal?: AbortSignal): Promise<Discovery> {
    if (this.#known) return this.#known;
    const { clock } = this.#init;
    if (this.#failed && clock.now() - this.#failed.atMs < VERSION_REREAD_MS) return { read: false, error: this.#failed.error };
    if (signal?.aborted) throw new AbortError(undefined, { cause: signal.reason });
    const flight = (this.#flight ??= this.#start());
    flight.waiters++;
    try {
      return await waitFor(flight.promise, signal);
    } finally {
      flight.waiters--;
      if (flight.waiters === 0 && this.#flight === flight) {
        // Nobody waits any more (their deadlines or aborts came first): the read stops, and counts as
        // a failed one, so that a Nova too slow to answer it is not asked again by every next call.
        this.#flight = undefined;
        const error = new AbortError('the compute version document was not read: every caller waiting for it ended first');
        this.#failed = { error, atMs: this.#init.clock.now() };
        flight.controller.abort(error);
      }
    }
  }

  #start(): Flight {
    const controller = new AbortController();
    const { clock, logger, clientMax } = this.#init;
    const promise = this.#init.read(controller.signal).then(
      (data): Discovery => {
        const range = parseVersionDocument(data);
        const known = { read: true as const, range, version: pickMicroversion(range, clientMax) };
        this.#known = known;
        this.#failed = undefined;
        logger.debug({ min: range?.min, max: range?.max, microversion: known.version }, 'compute version document read');
        return known;
      },
      (error: unknown): Discovery => {
        const e = error instanceof Error ? error : new Error(String(error));
        if (!controller.signal.aborted) {
          this.#failed = { error: e, atMs: clock.now() };
          logger.warn({ err: e.message }, `compute version document not read: requests go at microversion 2.1 for ${VERSION_REREAD_MS / 1000} s, then it is read again`);
        }
        return { read: false, error: e };
      },
    );
    const flight: Flight = { promise, controller, waiters: 0 };
    void promise.finally(() => {
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
