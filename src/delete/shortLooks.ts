/**
 * Short looks while a create waits (issue 20, item 4): while a create of a quota guard on the
 * client waits for headroom, the client's waits on deletions (followed deletions and delete waits;
 * not the guard's ACTIVE waits) look at `min(their interval, the short interval)` where their 404
 * is near, so the 404 that frees the quota is seen within about a second instead of the caller's
 * interval; with nobody waiting, at the caller's interval. Where the 404 is near is the look plan's
 * call (`lookPlan.ts`): everywhere until the engine has learned how long its deletes take, then
 * only for a server shown `DELETED` or deleting for as long as the learned time ({@link ShortLooks.nearOf}). Backpressure first (`pollPace.ts`): an answer slower than half
 * the short interval, a 5xx or a 429 widens the pace, and while the pace is widened there are no
 * short looks (every wait looks at its own interval, widened, as without them): a slow Nova never
 * gets more looks. The engine's rate limit bounds them too.
 *
 * @module
 */

/** The short intervals asked for now, and the interval of a wait's looks under them. */
export class ShortLooks {
  readonly #asked = new Map<symbol, number>();

  /**
   * @param onBegin - Called when a short interval is asked for (the engine pulls its waits' next looks in).
   * @param paceFactor - The engine's poll pace factor now (1: Nova answers well).
   */
  constructor(
    private readonly onBegin: () => void,
    private readonly paceFactor: () => number,
  ) {}

  /** The shortest interval asked for now, in ms; undefined when nobody asks. */
  get ms(): number | undefined {
    let ms: number | undefined;
    for (const v of this.#asked.values()) ms = ms === undefined ? v : Math.min(ms, v);
    return ms;
  }

  /**
   * Ask for looks at deletions at most `ms` apart until the function returned is called
   * (idempotent). @param ms - The short interval, in ms.
   */
  begin(ms: number): () => void {
    const key = Symbol('short looks');
    this.#asked.set(key, ms);
    this.onBegin();
    return () => void this.#asked.delete(key);
  }

  /** The interval of a wait's looks now, before the pace, in ms: its own, or the short one for a wait on a deletion (no `until`) while the pace is not widened. */
  intervalOf(w: { readonly intervalMs: number; readonly until?: unknown }): number {
    const ms = this.ms;
    return ms === undefined || w.until !== undefined || this.paceFactor() > 1 ? w.intervalMs : Math.min(w.intervalMs, ms);
  }

  /**
   * The interval of a wait's looks where its server's 404 is near, before the pace, in ms: its
   * confirm interval, or the short one for a wait on a deletion (no `until`) while the pace is not
   * widened, whichever is shorter.
   */
  nearOf(w: { readonly confirmIntervalMs: number; readonly until?: unknown }): number {
    const ms = this.ms;
    return ms === undefined || w.until !== undefined || this.paceFactor() > 1 ? w.confirmIntervalMs : Math.min(w.confirmIntervalMs, ms);
  }
}
