/**
 * The second clock of the kept `/limits` reading: when this holder first saw each reading (by the
 * reading's order number, on the holder's own injectable clock, which is monotonic), so that a
 * reading Redis's clock calls fresh (after that clock stepped back) is still refused once this
 * holder has seen it for longer than `limitsMaxAgeMs`. See `docs/fleet-ledger.md`, "Clock steps".
 *
 * @module
 */
import type { Clock } from '../core/index.js';

/** How many readings are remembered (the newest); older ones are stale by then anyway. */
const REMEMBERED = 64;

/** When each reading was first seen, and the highest order number found stale on the own clock. */
export class ReadingAges {
  readonly #firstSeen = new Map<number, number>();
  #staleBelow = -1;
  #maxOrder = 0;

  /**
   * @param clock - The holder's clock (`now()`, ms, monotonic).
   * @param maxAgeMs - `limitsMaxAgeMs`: a reading first seen longer ago than this is stale.
   */
  constructor(
    private readonly clock: Clock,
    private readonly maxAgeMs: number,
  ) {}

  /** Note an order number Redis gave (the highest is written back after a Redis restart). */
  order(seq: number): void {
    if (Number.isFinite(seq)) this.#maxOrder = Math.max(this.#maxOrder, seq);
  }

  /** The highest order number seen. */
  get maxOrder(): number {
    return this.#maxOrder;
  }

  /** The reading of order number `seq` was seen (`at`: the own clock, before the call that brought it). */
  saw(seq: number, at: number): void {
    this.order(seq);
    if (seq > this.#staleBelow && !this.#firstSeen.has(seq)) {
      this.#firstSeen.set(seq, at);
      if (this.#firstSeen.size > REMEMBERED) this.#firstSeen.delete(Math.min(...this.#firstSeen.keys()));
    }
  }

  /**
   * The highest order number of a reading seen for longer than `maxAgeMs` on the own clock: that
   * reading and every older one are stale whatever Redis's clock says (-1: none).
   */
  staleSeq(): number {
    const now = this.clock.now();
    for (const [seq, at] of this.#firstSeen) if (now - at > this.maxAgeMs) this.#staleBelow = Math.max(this.#staleBelow, seq);
    for (const seq of this.#firstSeen.keys()) if (seq <= this.#staleBelow) this.#firstSeen.delete(seq);
    return this.#staleBelow;
  }

  /**
   * Age of a kept reading when it was judged fresh: the older of its age on Redis's clock
   * (`redisNow - sentAt`) and on the own clock (`at`, when the judging call was sent, minus when
   * the reading was first seen).
   */
  ageMs(seq: number, sentAt: number, redisNow: number, at: number): number {
    const first = this.#firstSeen.get(seq);
    return Math.max(0, redisNow - sentAt, first === undefined ? 0 : at - first);
  }
}
