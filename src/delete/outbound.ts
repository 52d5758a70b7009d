/**
 * How the delete engine's requests go out, and how a slow or failing Nova gets fewer of them:
 *
 * - every request waits out Nova's `Retry-After` (`pause.ts`), then takes a turn of the rate limit
 *   (`maxRequestsPerSecond`, `turns.ts`);
 * - a look (a GET, a listing) tells its answer's latency and failure to the poll pace (`pollPace.ts`),
 *   which widens the engine's intervals;
 * - a listing waits for any other listing of the engine: one listing in flight at a time (p-limit);
 * - a DELETE (or force-delete) first takes a slot of the DELETE window (`deleteWindow.ts`), which
 *   follows the DELETEs' latency.
 *
 * @module
 */
import pLimit from 'p-limit';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import { DeleteWindow } from './deleteWindow.js';
import { NovaPause } from './pause.js';
import { PollPace } from './pollPace.js';
import { RateTurns } from './turns.js';

/** The outbound requests of one engine (see the module). */
export class Outbound {
  /** How much wider than the callers' intervals the engine looks (AIMD on the looks' answers). */
  readonly pace: PollPace;
  readonly #turns: RateTurns;
  readonly #deletes: DeleteWindow;
  readonly #listingGate = pLimit(1);

  /**
   * @param clock - The engine's clock.
   * @param logger - Where a pause Nova asked for is said.
   * @param maxRequestsPerSecond - The rate limit; `Infinity` for none.
   */
  constructor(clock: Clock, logger: Logger, maxRequestsPerSecond: number) {
    this.#turns = new RateTurns(maxRequestsPerSecond, new NovaPause(clock, logger));
    this.pace = new PollPace(clock);
    this.#deletes = new DeleteWindow(clock);
  }

  /** Clock time until which Nova's pause holds every request back (in the past, or -Infinity, when none). */
  get pausedUntil(): number {
    return this.#turns.pausedUntil;
  }

  /** DELETEs allowed in flight now. */
  get deleteWindow(): number {
    return this.#deletes.size;
  }

  /** Send one request under the rate limit (see `RateTurns.send`: rejects with `AbortError` as soon as `signal` aborts). */
  send<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    return this.#turns.send(fn, signal);
  }

  /** One look (a GET) under the rate limit, its answer told to the pace. */
  look<T>(fn: () => Promise<T>, signal: AbortSignal): Promise<T> {
    return this.send(() => this.pace.timed(fn), signal);
  }

  /** One listing: after any listing in flight (one at a time), then as {@link look}. */
  listing<T>(fn: () => Promise<T>, signal: AbortSignal): Promise<T> {
    return this.#listingGate(() => this.look(fn, signal));
  }

  /** One DELETE in a slot of the DELETE window, then under the rate limit; rejects with `AbortError` as soon as `signal` aborts. */
  delete<T>(fn: () => Promise<T>, signal: AbortSignal): Promise<T> {
    return this.#deletes.run(() => this.send(fn, signal), signal);
  }
}
