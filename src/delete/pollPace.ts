/**
 * The delete engine's poll pace: how much wider than the callers' intervals it looks, from what
 * Nova's answers to its looks (GETs and listings) show. AIMD, as TCP's congestion control (RFC 5681)
 * applied to a poll interval: an answer slower than a share of the interval, a 5xx, a 429 or no
 * answer at all (a request time limit, a reset) doubles the factor (multiplicative increase of the
 * interval); a healthy answer takes a step off it (additive decrease), back to 1 (the callers' own
 * intervals). A slow or failing Nova so gets fewer looks, and a recovered one its normal schedule
 * back, slowly.
 *
 * One change per round trip: an answer only changes the factor when its request started after the
 * last change (the answers of requests sent before a widening all saw the same trouble), and a
 * narrowing waits at least one widened interval after the last change. Nova's `Retry-After` is not
 * handled here: it pauses every request (`pause.ts`).
 *
 * Every time comes from the engine's clock. Source: RFC 5681 (AIMD); Google SRE book, "Handling
 * Overload" (a client backs off when the server struggles).
 *
 * @module
 */
import type { Clock } from '../core/clock.js';
import { isTransient } from '../transport/http.js';

/**
 * Share of the interval above which an answer's latency counts as Nova slowing down.
 * @default 0.5 (an answer slower than half the interval widens it)
 */
export const SLOW_ANSWER_SHARE = 0.5;

/**
 * Widest factor of the interval.
 * @default 4 (a 5 s interval widens to 20 s at most)
 */
export const MAX_PACE_FACTOR = 4;

/**
 * Factor of a widening (multiplicative increase of the interval).
 * @default 2
 */
export const WIDEN_FACTOR = 2;

/**
 * What a healthy answer takes off the factor (additive decrease, in intervals).
 * @default 0.5
 */
export const NARROW_STEP = 0.5;

/** The poll pace of one engine (see the module). */
export class PollPace {
  readonly #clock: Clock;
  #factor = 1;
  #changedAt = Number.NEGATIVE_INFINITY;
  /** The smallest pending interval, in ms: the reference of "slow". */
  baseMs = Number.POSITIVE_INFINITY;

  /** @param clock - The engine's clock. */
  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** How many times the callers' intervals the engine waits between looks now (1 to {@link MAX_PACE_FACTOR}). */
  get factor(): number {
    return this.#factor;
  }

  /** `ms` widened by the pace. */
  widen(ms: number): number {
    return ms * this.#factor;
  }

  /**
   * Run one look `fn` (a GET or a listing) and note how Nova answered it. Resolves or rejects as
   * `fn` does.
   */
  async timed<T>(fn: () => Promise<T>): Promise<T> {
    const startedAt = this.#clock.now();
    try {
      const value = await fn();
      this.#answered(startedAt, this.#clock.now() - startedAt > SLOW_ANSWER_SHARE * this.baseMs);
      return value;
    } catch (error) {
      // A transient failure (5xx, 429, no answer, a time limit) is trouble; anything else (a 403, a
      // garbled body, an abort) says nothing of Nova's load.
      if (isTransient(error)) this.#answered(startedAt, true);
      throw error;
    }
  }

  #answered(startedAt: number, trouble: boolean): void {
    if (startedAt < this.#changedAt) return; // sent before the last change: its answer is already counted
    const now = this.#clock.now();
    if (trouble) {
      const next = Math.min(MAX_PACE_FACTOR, this.#factor * WIDEN_FACTOR);
      if (next !== this.#factor) this.#changedAt = now;
      this.#factor = next;
      return;
    }
    if (this.#factor <= 1 || now - this.#changedAt < this.widen(Number.isFinite(this.baseMs) ? this.baseMs : 0)) return;
    this.#factor = Math.max(1, this.#factor - NARROW_STEP);
    this.#changedAt = now;
  }
}
