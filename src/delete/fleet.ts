/**
 * The delete engine's port to a fleet watcher: the hosts of one project elect one watcher, which
 * looks for all of them and publishes what it saw (`nova-guard/redis` implements it on the Redis
 * ledger; this layer only defines what the engine asks of it, and never imports it).
 *
 * While the link is `consuming` (its publications arrive in sequence and in time), the engine's
 * delete waits (those without an `until` predicate: not the guard's ACTIVE wait) send no looks of
 * their own: their servers are registered as the fleet's interest and their answers come from the
 * publications. A proof of deletion from the fleet is judged by rule 3 of `evidence.ts` (the same
 * evidence as the engine's own: Nova's 404 or a proved absence, never weaker). When the link stops
 * consuming (a gap, a stall, Redis down), the waits look by themselves again at once.
 *
 * @module
 */
import type { GoneEvidence } from './types.js';

/** What the engine asks of a fleet link. */
export interface FleetLink {
  /** True while this host consumes the fleet watcher's publications: its delete waits send no looks of their own. */
  readonly consuming: boolean;
  /** The delete waits of the engine changed (a wait started or ended): register what `DeleteEngine.interest()` now says. */
  interestChanged(): void;
}

/** One server the engine's delete waits wait on (durations in ms). */
export interface FleetInterest {
  readonly serverId: string;
  /** The smallest `intervalMs` and `confirmIntervalMs` of its delete waits. */
  readonly intervalMs: number;
  readonly confirmIntervalMs: number;
  /** Time until the latest deadline of its delete waits. */
  readonly remainingMs: number;
}

/** A proof of deletion as a fleet watcher publishes it. */
export interface FleetProof {
  readonly serverId: string;
  readonly evidence: GoneEvidence;
}

/** The engine's side of the port (`DeleteEngine` implements it). */
export interface DeleteEngineFleet {
  /**
   * Attach `link` (one at a time).
   * @returns the function that detaches it.
   * @throws `ValidationError` when another link is attached.
   */
  attachFleet(link: FleetLink): () => void;
  /** The servers its delete waits wait on now. */
  interest(): FleetInterest[];
  /** The link started or stopped consuming: the waits stop looking, or look at once. */
  fleetChanged(): void;
}

/** What one wait looks like to {@link interestOf}. */
interface WaitLike {
  readonly until?: unknown;
  readonly intervalMs: number;
  readonly confirmIntervalMs: number;
  readonly deadlineAt: number;
}

/** A delete wait: one with no `until` predicate (the guard's ACTIVE wait and the fleet watcher's own waits have one). */
export const isDeleteWait = (w: WaitLike): boolean => w.until === undefined;

/**
 * Whether the fleet answers for a server: the link consumes, every wait on it is a delete wait, and
 * the watcher has not said it cannot answer for it (`fleetOff`).
 */
export function fleetCovers(link: FleetLink | undefined, entry: { readonly watches: readonly WaitLike[]; readonly fleetOff?: boolean }): boolean {
  return link !== undefined && link.consuming && entry.fleetOff !== true && entry.watches.length > 0 && entry.watches.every(isDeleteWait);
}

/** The fleet interest of `entries` at clock time `now`. */
export function interestOf(entries: Iterable<{ serverId: string; watches: readonly WaitLike[] }>, now: number): FleetInterest[] {
  const out: FleetInterest[] = [];
  for (const e of entries) {
    const waits = e.watches.filter(isDeleteWait);
    if (waits.length === 0) continue;
    out.push({
      serverId: e.serverId,
      intervalMs: Math.min(...waits.map((w) => w.intervalMs)),
      confirmIntervalMs: Math.min(...waits.map((w) => w.confirmIntervalMs)),
      remainingMs: Math.max(0, Math.max(...waits.map((w) => w.deadlineAt)) - now),
    });
  }
  return out;
}
