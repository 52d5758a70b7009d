/**
 * Nova's pause for the delete engine: a `Retry-After` on any of the engine's requests (a DELETE, a
 * look, a listing) holds back every request of the engine until it is over, on the clock, so a
 * Nova that asks for fewer requests gets fewer (RFC 9110 `Retry-After`; Nova's 413/429 `overLimit`
 * with `retryAfter`, a proxy's 503).
 *
 * @module
 */
import { sleep, type Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import { AbortError } from '../errors/index.js';
import { retryAfterOf } from '../transport/retry.js';

/** The engine's pause (see the module). */
export class NovaPause {
  #until = Number.NEGATIVE_INFINITY;
  readonly #clock: Clock;
  readonly #logger: Logger;

  /**
   * @param clock - The clock of the pause (the engine's).
   * @param logger - Where the start of a pause is said (info).
   */
  constructor(clock: Clock, logger: Logger) {
    this.#clock = clock;
    this.#logger = logger;
  }

  /** Clock time until which no request goes out; in the past when there is no pause. */
  get until(): number {
    return this.#until;
  }

  /** True while the pause lasts. */
  get active(): boolean {
    return this.#until > this.#clock.now();
  }

  /** A request failed: the `Retry-After` it carries (or its cause does), if any, extends the pause. */
  note(error: unknown): void {
    const ms = retryAfterOf(error);
    const until = this.#clock.now() + ms;
    if (ms <= 0 || until <= this.#until) return;
    this.#until = until;
    this.#logger.info({ retryAfterMs: ms }, 'Nova asked for a pause (Retry-After): no request before it is over');
  }

  /** Resolves when the pause is over; rejects with {@link AbortError} (cause: the signal's reason) when `signal` aborts first. */
  async over(signal: AbortSignal | undefined): Promise<void> {
    try {
      await sleep(this.#clock, this.#until - this.#clock.now(), signal);
    } catch {
      throw new AbortError(undefined, { cause: signal?.reason });
    }
  }
}
