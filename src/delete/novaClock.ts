/**
 * Nova's clock as seen through its `Date` header, for `changes-since` queries.
 *
 * `changes-since` is compared by Nova with its own `updated_at` column, so the time sent must be on
 * Nova's clock, not the client's (clock skew). Nova's `Date` header has one-second resolution and is
 * stamped after the request was served, so `Date - receipt time` is a lower bound of the offset, and
 * a margin is subtracted from every time sent (`../shared/realnova/REPORT.md`, last section:
 * "use Nova's clock, not the client's, with a margin").
 *
 * @module
 */

/** Margin subtracted from every `changes-since` time, in ms: the `Date` header's 1 s resolution, `updated_at` rounding and request latency. */
export const CHANGES_SINCE_MARGIN_MS = 2000;

/** Nova's `utils.isotime` form of a time, floored to the second: `2026-11-30T14:03:09Z`. */
export function isoSeconds(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Offset between Nova's clock and the local wall clock, learnt from `Date` headers. */
export class NovaClock {
  #offsetMs: number | undefined;

  /** Nova minus local, in ms, or undefined before the first `Date` header. */
  get offsetMs(): number | undefined {
    return this.#offsetMs;
  }

  /**
   * Learn from one response: its `Date` header (epoch ms) and the local wall-clock time it was
   * received. The latest sample wins, so a clock that is stepped is followed.
   */
  learn(serverDateMs: number | undefined, receivedWallMs: number): void {
    if (serverDateMs === undefined || !Number.isFinite(serverDateMs)) return;
    this.#offsetMs = serverDateMs - receivedWallMs;
  }

  /** A local wall-clock time on Nova's clock (unchanged while no offset is known). */
  toNova(wallMs: number): number {
    return wallMs + (this.#offsetMs ?? 0);
  }
}
