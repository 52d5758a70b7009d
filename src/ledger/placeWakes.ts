/**
 * `PlaceWakes`: the wake-ups a ledger addresses to the places of its queue (`QuotaLedger.onWake`),
 * for the places one ledger object holds, oldest first.
 *
 * - {@link PlaceWakes.wakeHead} (quota freed) wakes the oldest place only;
 * - a place that leaves from the head ({@link PlaceWakes.left}: admitted, or it gave up) wakes the
 *   next one;
 * - a wake-up for a place nobody listens for yet is kept and told when a listener comes.
 *
 * The queue is first come, first served (`admit` subtracts the needs of every place ahead), so a
 * place behind the oldest one cannot be admitted while the oldest does not fit: waking the oldest
 * loses no admission. The in-process ledger holds the whole queue, so its oldest place is the
 * head of the queue; `RedisQuotaLedger` and `SqliteQuotaLedger` hold their own process's places,
 * so a freed server wakes the oldest place of each process that waits (one admission per process,
 * not one per waiting call).
 *
 * @module
 */
import { callEach } from '../core/listeners.js';

/** The places of one ledger object in join order, and who listens for their wake-ups. */
export class PlaceWakes {
  readonly #order: string[] = [];
  readonly #listeners = new Map<string, Set<() => void>>();
  readonly #pending = new Set<string>();

  /** A place joined the queue (behind every place held). */
  joined(id: string): void {
    this.#order.push(id);
  }

  /** A place left the queue (idempotent): the next one wakes when it was the oldest. */
  left(id: string): void {
    this.#pending.delete(id);
    const i = this.#order.indexOf(id);
    if (i < 0) return;
    this.#order.splice(i, 1);
    if (i === 0) this.wakeHead();
  }

  /** Quota freed: wake the oldest place (kept for later when nobody listens for it). */
  wakeHead(): void {
    const head = this.#order[0];
    if (head === undefined) return;
    const set = this.#listeners.get(head);
    if (set && set.size > 0) callEach(set);
    else this.#pending.add(head);
  }

  /** Listen for the wake-ups of place `id`; returns the unsubscribe function (idempotent). */
  listen(id: string, listener: () => void): () => void {
    let set = this.#listeners.get(id);
    if (!set) this.#listeners.set(id, (set = new Set()));
    const own = (): void => listener();
    set.add(own);
    if (this.#pending.delete(id)) callEach([own]);
    return () => {
      set.delete(own);
      if (set.size === 0 && this.#listeners.get(id) === set) this.#listeners.delete(id);
    };
  }

  /** Forget every place and listener. */
  clear(): void {
    this.#order.length = 0;
    this.#listeners.clear();
    this.#pending.clear();
  }
}
