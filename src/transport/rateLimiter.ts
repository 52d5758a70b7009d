/**
 * A token bucket: the client-wide cap on the requests per second of coalesced delete-waiting.
 *
 * Source: nodepool's provider `rate` (seconds between API operations, passed to openstacksdk as
 * `rate_limit = 1 / rate`). Here the cap is a rate with
 * a burst of one second's worth of requests, so a short burst is not slowed and a fleet on average
 * never exceeds `ratePerSecond`.
 *
 * @module
 */
import { sleep, systemClock, type Clock } from '../core/clock.js';

/** A token bucket. Time is the clock's `now()` (monotonic ms). */
export class TokenBucket {
  /** Requests per second; `Infinity` disables the cap. */
  readonly ratePerSecond: number;
  /** Largest burst, in requests: `max(1, ratePerSecond)`. */
  readonly burst: number;
  #tokens: number;
  #refilledAt: number;
  readonly #clock: Clock;

  /**
   * @param ratePerSecond - Positive number of requests per second, or `Infinity` for no cap.
   * @param clock - The clock (default {@link systemClock}), or just its `now()` in ms.
   */
  constructor(ratePerSecond: number, clock: Clock | (() => number) = systemClock) {
    this.ratePerSecond = ratePerSecond;
    this.burst = Number.isFinite(ratePerSecond) ? Math.max(1, ratePerSecond) : Number.POSITIVE_INFINITY;
    this.#tokens = this.burst;
    this.#clock = typeof clock === 'function' ? { ...systemClock, now: clock } : clock;
    this.#refilledAt = this.#clock.now();
  }

  #refill(): void {
    const t = this.#clock.now();
    if (Number.isFinite(this.burst)) {
      this.#tokens = Math.min(this.burst, this.#tokens + ((t - this.#refilledAt) * this.ratePerSecond) / 1000);
    }
    this.#refilledAt = t;
  }

  /** Tokens available now (may be negative after {@link TokenBucket.take} of more than there was). */
  get tokens(): number {
    this.#refill();
    return this.#tokens;
  }

  /** Milliseconds until `n` tokens are available; 0 when they are. */
  delayFor(n = 1): number {
    if (!Number.isFinite(this.burst)) return 0;
    this.#refill();
    const missing = n - this.#tokens;
    return missing <= 0 ? 0 : Math.ceil((missing * 1000) / this.ratePerSecond);
  }

  /** Spend `n` tokens now, even when that leaves the bucket negative (a debt later requests wait out). */
  take(n = 1): void {
    if (!Number.isFinite(this.burst) || n <= 0) return;
    this.#refill();
    this.#tokens -= n;
  }

  /**
   * Wait until one token is available, then spend it.
   * @throws the signal's reason when `signal` aborts while waiting.
   */
  async acquire(signal?: AbortSignal): Promise<void> {
    for (;;) {
      const delay = this.delayFor(1);
      if (delay === 0) {
        this.take(1);
        return;
      }
      await sleep(this.#clock, delay, signal);
    }
  }
}
