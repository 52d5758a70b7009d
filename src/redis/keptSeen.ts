/**
 * What one Redis ledger object knows of the kept `/limits` reading: the order number of the newest
 * kept reading it knows was stored in Redis (`QuotaLedger.keptSeen`, for the credit of a confirmed
 * deletion: `FreedCredit.keptSeq`). Known from its own script answers that carry a reading kept in
 * Redis (never the order number of a read not stored yet, such as a refresh lock's), and from the
 * "kept reading refreshed" messages (every holder's store publishes the order number of the reading
 * then kept; other messages, such as `vetted`, are not order numbers and are ignored).
 *
 * @module
 */

/** The largest order number of a kept reading known stored (see the module description). */
export class KeptSeen {
  #seq: number | undefined;

  /**
   * A kept reading of order number `seq` is (or was) stored in Redis: a script's number (`-1`: no
   * reading kept), a message's text, or a raw answer's Buffer. Anything that is not a whole number
   * of at least 0 is ignored.
   */
  note(seq: unknown): void {
    if (seq === undefined || seq === null) return;
    const text = String(seq);
    if (!/^\d{1,16}$/.test(text)) return;
    const n = Number(text);
    if (Number.isSafeInteger(n) && (this.#seq === undefined || n > this.#seq)) this.#seq = n;
  }

  /** The largest order number noted; `undefined` before any. */
  get seq(): number | undefined {
    return this.#seq;
  }
}
