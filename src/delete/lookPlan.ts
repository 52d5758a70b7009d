/**
 * When a wait looks next: often only where a change is near and a wait needs it (issue 31, item 2).
 *
 * The engine learns how long this cloud takes (`learnedDuration.ts`, from its own looks):
 * - **deletes**: from the start of a deletion (this engine's DELETE accepted, or else the first look
 *   that showed task_state `deleting` or status `DELETED`) to Nova's 404, each sample the midpoint
 *   between the last look that still showed the server and the look that got the 404; the lower
 *   quartile of the last 32 ({@link DELETE_QUANTILE});
 * - **builds**: from the first wait on a server in BUILD to the first look that showed it out of
 *   BUILD (midpoint likewise); the median ({@link BUILD_QUANTILE}).
 *
 * The next look of a wait, after a look at clock time `now` (before jitter):
 * 1. Nova in trouble (the poll pace is widened, `pollPace.ts`): the rule without learning, widened
 *    (the caller's interval; the confirm interval once `DELETED` shows; no short looks), or later
 *    where the rules below say so (a build whose learned time has not come), so a slow or failing
 *    Nova never gets a look more than before.
 * 2. The server shows `DELETED`: its confirm interval, or the short interval while a create waits
 *    for headroom (`shortLooks.ts`), whichever is shorter ("near").
 * 3. Its deletion is under way and the engine has learned how long deletes take: before the
 *    learned time, the caller's interval, with one look at the learned time; from then on "near".
 *    Only where "near" is shorter than the caller's interval: otherwise a look at the learned time
 *    (most 404s come a little after it) would only move the phase of the looks and see the 404 a
 *    whole interval late, so rule 5 holds.
 * 4. It is in BUILD and the engine has learned how long builds take: one look at the learned time,
 *    none before it; from then on the caller's interval (for the guard's ACTIVE wait, its interval).
 * 5. Otherwise (nothing learned yet, or no deletion or build known): the caller's interval, the
 *    short interval while a create waits for headroom (a wait on a deletion). This is the prior,
 *    until an engine has seen three deletes end in their 404, with one change: a wait on a server
 *    whose deletion has just begun (its DELETE accepted here, or the fleet's hint) does not look at
 *    once (a look then cannot see the 404) but one near interval after the start, and then on the
 *    grid of the caller's interval from the start: as many looks as looking at once and every
 *    interval, and a 404 that comes within the near interval (a fast cloud, a server that never had a
 *    host) seen then instead of a whole interval late (a fresh client: a CLI process per delete).
 *    Once learned, a wait whose deletion has just begun skips the look at once when the learned time
 *    is at least the caller's interval (its first look one interval after the start: the same grid
 *    of looks, one look fewer: {@link LookPlan.firstDelayMs}).
 *
 * What ends a wait is untouched (`evidence.ts`): only Nova's 404 for the server's own request.
 *
 * @module
 */
import { LearnedDuration } from './learnedDuration.js';
import type { Observation } from './observe.js';
import { statusOf } from '../core/counting.js';
import type { Entry, Watch } from './watch.js';

/** Quantile of the learned DELETE-to-404 times at which the looks become near. @default 0.25 (the lower quartile) */
export const DELETE_QUANTILE = 0.25;

/**
 * Quantile of the learned build times at which a server in BUILD is looked at. @default 0.5 (the
 * median: an ACTIVE seen a little late frees nothing late, and each look at a building server is a
 * detail listing or a GET)
 */
export const BUILD_QUANTILE = 0.5;

/** What a {@link LookPlan} reads of its engine. */
export interface LookPlanInit {
  /** The poll pace factor now (1: Nova answers well; above: slow or failing, `pollPace.ts`). */
  readonly paceFactor: () => number;
  /** A wait's interval without learning: its own, or the short one for a deletion while a create waits (`ShortLooks.intervalOf`). */
  readonly intervalOf: (w: Watch) => number;
  /** A wait's near interval: its confirm interval, or the short one for a deletion while a create waits (`ShortLooks.nearOf`). */
  readonly nearOf: (w: Watch) => number;
}

/** The look plan of one engine (see the module); every time on the engine's clock, in ms. */
export class LookPlan {
  /** How long deletes take here, DELETE (or first seen deleting) to 404. */
  readonly deletes = new LearnedDuration(DELETE_QUANTILE);
  /** How long builds take here, first wait to out of BUILD. */
  readonly builds = new LearnedDuration(BUILD_QUANTILE);
  readonly #d: LookPlanInit;

  constructor(init: LookPlanInit) {
    this.#d = init;
  }

  /**
   * A look at `entry`'s server answered `obs` at `now` (a body, a listing's presence with `obs`
   * undefined, or the 404): note when its deletion or build began and learn from their ends. Called
   * before the waits are told.
   */
  observed(entry: Entry, obs: Observation | undefined, now: number): void {
    if (obs?.gone) {
      // The middle of the last look that still showed it (or the start of its deletion) and this one.
      // A first look that finds it gone so teaches a shorter time, and a later first look that finds it
      // still there a longer one: the learned time settles where first looks find most servers still there.
      const since = entry.deletingSince;
      if (since !== undefined) this.deletes.add((Math.max(entry.lastLookAt, since) + now) / 2 - since);
    } else if (obs) {
      const status = statusOf(obs.server);
      const deleting = status === 'DELETED' || obs.server['OS-EXT-STS:task_state'] === 'deleting';
      // A deletion is under way only while a look shows it (a DELETE answered 204 and then lost, a hint that was wrong).
      if (deleting) entry.deletingSince ??= now;
      else entry.deletingSince = undefined;
      if (status === 'BUILD' && !deleting) {
        entry.building = true;
      } else if (entry.building) {
        entry.building = false;
        if (!deleting && Number.isFinite(entry.lastLookAt)) this.builds.add((entry.lastLookAt + now) / 2 - entry.buildSince);
      }
    }
    entry.lastLookAt = now;
  }

  /** The interval of `w` now, before the pace: "near" in phases 2 and 3 of the module, else as without learning. */
  intervalMs(w: Watch, now: number): number {
    const e = w.entry;
    if (this.#d.paceFactor() > 1) return e.seenDeleted ? Math.min(w.intervalMs, w.confirmIntervalMs) : w.intervalMs;
    if (e.seenDeleted || this.#near(e, now)) return Math.min(w.intervalMs, this.#d.nearOf(w));
    if (e.deletingSince !== undefined && this.deletes.ms !== undefined) return w.intervalMs;
    if (e.building && this.builds.ms !== undefined) return w.intervalMs;
    return this.#d.intervalOf(w);
  }

  /**
   * Time from `now` to `w`'s next look, in ms, the pace included, before jitter (see the module).
   * While Nova is in trouble (the pace widened) it is never sooner than without learning, widened,
   * and later where the plan says so (a build whose learned time has not come): fewer looks only.
   */
  delayMs(w: Watch, now: number): number {
    const planned = this.#plannedMs(w, now);
    const factor = this.#d.paceFactor();
    if (factor <= 1) return planned;
    const plain = w.entry.seenDeleted ? Math.min(w.intervalMs, w.confirmIntervalMs) : w.intervalMs;
    return Math.max(factor * plain, planned);
  }

  /** {@link delayMs} while Nova answers well. */
  #plannedMs(w: Watch, now: number): number {
    const e = w.entry;
    const near = Math.min(w.intervalMs, this.#d.nearOf(w));
    if (e.seenDeleted || this.#near(e, now)) return near;
    const deleteMs = this.deletes.ms;
    // A near interval no shorter than the caller's gains nothing from the learned time: a look placed
    // at it only moves the phase of the looks (most 404s come a little after it), so the prior holds.
    if (e.deletingSince !== undefined && !this.#nearIsShorter(w)) return this.#d.intervalOf(w);
    // Before the learned time: the caller's interval, or the look at the learned time if sooner (within
    // a near interval of it, as a near look: a jittered look just before it does not add one).
    if (e.deletingSince !== undefined && deleteMs !== undefined) return Math.min(w.intervalMs, Math.max(near, e.deletingSince + deleteMs - now));
    const buildMs = this.builds.ms;
    // Not before the learned time (a first look jittered a little early counts as the look at it).
    if (e.building && buildMs !== undefined) return now < e.buildSince + buildMs * (1 - w.jitter) ? e.buildSince + buildMs - now : w.intervalMs;
    // Nothing learned, a deletion under way since a known time: the grid of the caller's interval from
    // that start (the first look, a near interval after the start, took the place of the look at once).
    if (e.deletingSince !== undefined && deleteMs === undefined) return this.#onGrid(w, e.deletingSince, now);
    return this.#d.intervalOf(w);
  }

  /**
   * Time from `now` (a look) to the next point of the grid of `w`'s interval (without learning) that
   * starts at `since`, in ms. A look jittered a little before a point counts as the look at it (the
   * next one is the point after), so jitter never adds a look.
   */
  #onGrid(w: Watch, since: number, now: number): number {
    const interval = this.#d.intervalOf(w);
    const next = since + (Math.floor((now - since + w.jitter * interval) / interval) + 1) * interval;
    return next - now;
  }

  /**
   * Time from `now` (its start) to the first look of `w` at a server not looked at yet, in ms: at
   * once, unless the engine has learned how long this cloud takes and the server's deletion or build
   * is known to have begun (its DELETE accepted here, or the fleet's hint, `WatchSpec.phase`): then
   * at the learned time (for a deletion, the caller's interval if sooner); for a deletion whose
   * near interval is not shorter than the caller's, one caller's interval after the deletion began
   * when the learned time is at least that interval (the look at once could not see the 404; the
   * later looks keep their grid), else at once. A look later than at once is never a look more,
   * so the pace does not change it.
   */
  firstDelayMs(w: Watch, now: number): number {
    const e = w.entry;
    if (Number.isFinite(e.lastLookAt)) return 0;
    const deleteMs = this.deletes.ms;
    if (e.deletingSince !== undefined && deleteMs !== undefined) {
      if (this.#nearIsShorter(w)) return Math.max(0, Math.min(w.intervalMs, e.deletingSince + deleteMs - now));
      // Looks at the caller's interval from the deletion's start (rule 5). When this cloud's deletes
      // take at least that interval (learned), the look at once is left out: a 404 that comes before
      // the first interval is over is seen at its end either way, so the grid of looks, and the time
      // each 404 is seen, stay as they were; only a look that could not see one is saved.
      if (deleteMs >= w.intervalMs) return Math.max(0, e.deletingSince + w.intervalMs - now);
    }
    // Nothing learned yet and the deletion just began (this engine's DELETE accepted, or the fleet's
    // hint): a look at once could not see its 404 (a DELETE answered 204 leaves the server deleting),
    // so the first look comes one near interval after the start and the later ones keep the grid of
    // the caller's interval from the start: as many looks as before, and a 404 that comes within the
    // near interval (a fast cloud, a server that never had a host) seen then, not a whole interval late.
    if (e.deletingSince !== undefined && deleteMs === undefined && this.#nearIsShorter(w)) return Math.max(0, e.deletingSince + this.#d.nearOf(w) - now);
    const buildMs = this.builds.ms;
    if (e.building && buildMs !== undefined) return Math.max(0, e.buildSince + buildMs - now);
    return 0;
  }

  /** `w`'s near interval is shorter than its own: only then does a look at the learned delete time see a 404 sooner. */
  #nearIsShorter(w: Watch): boolean {
    return this.#d.nearOf(w) < w.intervalMs;
  }

  /** The deletion of `e` has gone on for as long as this cloud's deletes take (learned). */
  #near(e: Entry, now: number): boolean {
    const deleteMs = this.deletes.ms;
    return e.deletingSince !== undefined && deleteMs !== undefined && now >= e.deletingSince + deleteMs;
  }
}
