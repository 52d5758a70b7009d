/**
 * The delete engine's DELETE window: how many DELETEs (and force-deletes) of one client are in flight
 * at once, following their latency (AIMD, as Netflix `concurrency-limits`' AIMD and gradient
 * limiters): it starts small, grows by one per window of fast answers, and halves on a slow answer
 * (slower than {@link SLOW_DELETE_MS} and than twice the fastest seen), a 5xx, a 429 or no answer. On the real Nova's single API worker, 10
 * concurrent DELETEs each took seconds and Nova freed the servers later than one-at-a-time DELETEs
 * did: a Nova that answers DELETEs slowly gets fewer at once.
 *
 * The slots are p-limit's (its `concurrency` is set as the window moves). A DELETE whose call aborts
 * while it waits for a slot leaves at once (its caller is told); when its slot comes it is not sent.
 *
 * @module
 */
import pLimit from 'p-limit';
import type { Clock } from '../core/clock.js';
import { untilSettledOrAborted } from '../core/clock.js';
import { AbortError } from '../errors/index.js';
import { isTransient } from '../transport/http.js';

/**
 * DELETEs in flight at first.
 * @default 2
 */
export const INITIAL_DELETE_WINDOW = 2;

/**
 * Most DELETEs in flight at once (the default `concurrency` of `deleteServers`).
 * @default 10
 */
export const MAX_DELETE_WINDOW = 10;

/**
 * A DELETE answered later than this, in ms, and later than {@link SLOW_DELETE_RATIO} times the
 * fastest DELETE seen, halves the window (a healthy Nova answers a DELETE in a few hundred ms; 10 at
 * once on one API worker took seconds each).
 * @default 1000
 */
export const SLOW_DELETE_MS = 1000;

/**
 * A DELETE slower than this many times the fastest one seen is slow (when also slower than
 * {@link SLOW_DELETE_MS}): latency that grows with the DELETEs in flight shrinks the window, a Nova
 * far away (every answer slow alike) does not.
 * @default 2
 */
export const SLOW_DELETE_RATIO = 2;

/** The DELETE window of one engine (see the module). */
export class DeleteWindow {
  readonly #clock: Clock;
  readonly #limit = pLimit(INITIAL_DELETE_WINDOW);
  /** The window, fractional: the slots are its whole part (at least 1). */
  #window = INITIAL_DELETE_WINDOW;
  #changedAt = Number.NEGATIVE_INFINITY;
  #fastestMs = Number.POSITIVE_INFINITY;

  /** @param clock - The engine's clock. */
  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** DELETEs allowed in flight now. */
  get size(): number {
    return this.#limit.concurrency;
  }

  /** DELETEs in flight now. */
  get active(): number {
    return this.#limit.activeCount;
  }

  /**
   * Run `fn` (one DELETE, its own retries included) in a slot of the window. Rejects with
   * {@link AbortError} as soon as `signal` aborts while it waits for its slot; `fn` is then not called.
   */
  async run<T>(fn: () => Promise<T>, signal: AbortSignal): Promise<T> {
    let result: { value: T } | { error: unknown } | undefined;
    const done = this.#limit(async () => {
      if (signal.aborted) return;
      const startedAt = this.#clock.now();
      try {
        result = { value: await fn() };
        this.#answered(startedAt, this.#slow(this.#clock.now() - startedAt));
      } catch (error) {
        result = { error };
        // A DELETE answered (404, 409, 403) says nothing of Nova's load; a transient failure does.
        this.#answered(startedAt, isTransient(error) || this.#slow(this.#clock.now() - startedAt));
      }
    });
    try {
      await untilSettledOrAborted(done, signal);
    } catch (reason) {
      throw new AbortError(undefined, { cause: reason });
    }
    if (!result) throw new AbortError(undefined, { cause: signal.reason });
    if ('error' in result) throw result.error;
    return result.value;
  }

  /** An answer after `latencyMs` is slow (see {@link SLOW_DELETE_MS}); the fastest one is remembered. */
  #slow(latencyMs: number): boolean {
    this.#fastestMs = Math.min(this.#fastestMs, latencyMs);
    return latencyMs > Math.max(SLOW_DELETE_MS, SLOW_DELETE_RATIO * this.#fastestMs);
  }

  #answered(startedAt: number, slow: boolean): void {
    if (slow) {
      // One halving per window: the answers of DELETEs sent before it saw the same Nova.
      if (startedAt < this.#changedAt) return;
      this.#window = Math.max(1, this.#window / 2);
      this.#changedAt = this.#clock.now();
    } else {
      this.#window = Math.min(MAX_DELETE_WINDOW, this.#window + 1 / Math.floor(this.#window));
    }
    this.#limit.concurrency = Math.max(1, Math.floor(this.#window));
  }
}
