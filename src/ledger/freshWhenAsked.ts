/**
 * How old a kept `/limits` reading may be for a ledger call that waited for another holder's
 * refresh of it: `limitsMaxAgeMs` counted from when the call was first told "another holder
 * refreshes", not from now.
 *
 * Why: a reading that was fresh when the call asked is as good for it as one the call would have
 * read itself then. Counted from now, a `GET /limits` slower than `limitsMaxAgeMs` (the default
 * 1 s; a slow Nova) left every reading stale on arrival, so each waiting holder, its wait over,
 * took the refresh lock and read `/limits` itself, one after another: one read per waiter and a
 * create of the N-th waiter after N reads. A reading of a deletion confirmed since, or seen by this
 * process for longer than `limitsMaxAgeMs`, stays stale: the stores check those as before.
 *
 * The allowance is measured on this process's clock from the ANSWER of the first ask that said
 * "another holder refreshes" to the SEND of the current ask, which is never more than the time the
 * store's clock moved between the two asks: a reading that was already stale when the call first
 * asked stays stale.
 *
 * @module
 */
import type { Clock } from '../core/clock.js';
import { waitForOthersRead, type LimitsRead } from './port.js';

/** See the module description. One per ledger call (`acquire`, `limits`). */
export class FreshWhenAsked {
  readonly #clock: Clock;
  readonly #maxAgeMs: number;
  #since: number | undefined;

  /** `maxAgeMs`: the ledger's `limitsMaxAgeMs`, in ms. */
  constructor(clock: Clock, maxAgeMs: number) {
    this.#clock = clock;
    this.#maxAgeMs = maxAgeMs;
  }

  /**
   * The store just answered that another holder refreshes the kept reading (the first such answer
   * counts): `wait` (the ledger's pause before it asks again) is awaited through
   * {@link waitForOthersRead}, as Nova's time.
   * @returns what `wait` resolves; rejects as `wait` does (or as the guard's deadline ends it).
   */
  waitForOthers<T>(read: LimitsRead, wait: Promise<T>): Promise<T> {
    this.#since ??= this.#clock.now();
    return waitForOthersRead(read, wait);
  }

  /** The largest age (on the store's clock) of a kept reading that is fresh for an ask sent at `sentAt` (this clock), in whole ms. */
  maxAgeMs(sentAt: number): number {
    return this.#since === undefined ? this.#maxAgeMs : this.#maxAgeMs + Math.max(0, Math.floor(sentAt - this.#since));
  }
}
