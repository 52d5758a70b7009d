/**
 * The delete engine's port to a fleet watcher: the hosts of one project elect one watcher, which
 * looks for all of them and publishes what it saw (`nova-guard/redis` implements it on the Redis
 * ledger; this layer only defines what the engine asks of it, and never imports it).
 *
 * While the link is `consuming` (its publications arrive in sequence and in time), the engine's
 * waits (delete waits and the guard's ACTIVE waits; never the fleet watcher's own waits) send no
 * looks of their own: their servers are registered as the fleet's interest and their answers come
 * from the publications (a published status is the status of a Nova answer the watcher got). A proof
 * of deletion from the fleet is judged by rule 2 of `evidence.ts` (the same evidence as the engine's
 * own: Nova's 404, never weaker; an absence from a listing is no proof), and dropped with every
 * other proof of its watcher when Nova contradicts it (`fleetConsumer.ts`). A published status
 * never ends a delete wait (ERROR or SOFT_DELETED with no task): the watcher's look may have been
 * sent before this host's DELETE was accepted (a server in ERROR before its delete), so the waits on
 * that server look by themselves and their own look decides. When the link stops consuming (a gap,
 * a stall, Redis down), the waits look by themselves again at once.
 *
 * @module
 */
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { Server } from '../core/types.js';
import type { GoneEvidence, Observation, WatchEnd, WatchSpec } from './types.js';

/** What the engine asks of a fleet link. */
export interface FleetLink {
  /** True while this host consumes the fleet watcher's publications: its delete waits send no looks of their own. */
  readonly consuming: boolean;
  /** The delete waits of the engine changed (a wait started or ended): register what `DeleteEngine.interest()` now says. */
  interestChanged(): void;
  /**
   * The engine's own `GET /servers/{id}`, sent at clock time `sentAt` (ms), found `serverId` alive (a
   * status other than `DELETED`): the link reconciles it with the proofs it took (`fleetConsumer.ts`).
   */
  ownLookAlive?(serverId: string, sentAt: number): void;
}

/** One server the engine's delete waits wait on (durations in ms). */
export interface FleetInterest {
  readonly serverId: string;
  /**
   * The smallest `intervalMs` of its waits, and the smallest interval where its 404 is near (their
   * `confirmIntervalMs`, or the short interval while a create waits: `shortLooks.ts`).
   */
  readonly intervalMs: number;
  readonly confirmIntervalMs: number;
  /** Time until the latest deadline of its delete waits. */
  readonly remainingMs: number;
  /**
   * Present (true) when a wait on it reads more than its status (the guard's ACTIVE wait returns the
   * server's body): the watcher publishes the whole body it saw, not only the fields a delete wait reads.
   */
  readonly whole?: true;
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
  readonly fleetWatch?: boolean | undefined;
  readonly intervalMs: number;
  readonly confirmIntervalMs: number;
  readonly deadlineAt: number;
}

/** A wait the fleet may answer: any but the fleet watcher's own (`WatchSpec.fleetWatch`). */
export const isFleetWait = (w: WaitLike): boolean => w.fleetWatch !== true;

/**
 * Whether the fleet answers for a server: the link consumes, no wait on it is the watcher's own,
 * and the watcher has not said it cannot answer for it (`fleetOff`).
 */
export function fleetCovers(link: FleetLink | undefined, entry: { readonly watches: readonly WaitLike[]; readonly fleetOff?: boolean }): boolean {
  return link !== undefined && link.consuming && entry.fleetOff !== true && entry.watches.length > 0 && entry.watches.every(isFleetWait);
}

/**
 * The fleet interest of `entries` at clock time `now`. `intervalMs` is the waits' own interval (the
 * watcher's look plan decides where to look more often, `lookPlan.ts`); `nearOf` gives a wait's
 * interval where its 404 is near (its confirm interval, or the short one while a create waits:
 * `ShortLooks.nearOf`), registered as the interest's `confirmIntervalMs`.
 */
export function interestOf(
  entries: Iterable<{ serverId: string; watches: readonly WaitLike[] }>,
  now: number,
  nearOf: (w: WaitLike) => number = (w) => w.confirmIntervalMs,
): FleetInterest[] {
  const out: FleetInterest[] = [];
  for (const e of entries) {
    const waits = e.watches.filter(isFleetWait);
    if (waits.length === 0) continue;
    out.push({
      serverId: e.serverId,
      intervalMs: Math.min(...waits.map((w) => w.intervalMs)),
      confirmIntervalMs: Math.min(...waits.map(nearOf)),
      remainingMs: Math.max(0, Math.max(...waits.map((w) => w.deadlineAt)) - now),
      ...(waits.some((w) => w.until !== undefined) ? { whole: true as const } : {}),
    });
  }
  return out;
}

/**
 * One observation in a publication: a proof (`g`), a status (`s`: the fields a delete wait reads, or
 * the whole body when a wait on it reads more, see {@link FleetInterest.whole}), or that the watcher
 * cannot answer for the server (`x`, the error's name: its looks kept failing, or found an orphan), so
 * the hosts waiting on it look by themselves.
 */
export type Published = { i: string; g: GoneEvidence } | { i: string; s: Partial<Server> } | { i: string; x: string };

/** One publication of the fleet watcher, however it travels (a Redis stream, a call in one process). */
export interface FleetPublication {
  /** The watcher's fencing epoch (one more for each watcher elected). */
  readonly epoch: number;
  /** The sequence number: one counter for every epoch; a number skipped is a gap. */
  readonly seq: number;
  /** Nova's `Date` as the watcher knows it (epoch ms), if it does. */
  readonly novaDateMs?: number | undefined;
  readonly items: readonly Published[];
}

/** Counters of one host's part in a fleet watcher. */
export interface FleetStats {
  /** Times this host took the lease (became the fleet's watcher). */
  elections: number;
  /** Publications this host wrote as the watcher. */
  published: number;
  /** Publications this host read and used. */
  consumed: number;
  /** Proofs of deletion from publications that ended waits of this host. */
  proofs: number;
  /** Publications ignored because an older epoch published them than one already seen. */
  staleEpoch: number;
  /** Gaps seen in the sequence numbers. */
  gaps: number;
  /** Times this host fell back to its own looks (a gap, no publication in time, the store failing). */
  fallbacks: number;
  /**
   * Times this host dropped a watcher's proofs (that epoch's and older): a server one of them proved
   * gone was found alive after it, by this host's own GET or a later publication (`fleetConsumer.ts`).
   */
  distrusted: number;
}

/** A new set of {@link FleetStats}, all zero. */
export const newFleetStats = (): FleetStats => ({ elections: 0, published: 0, consumed: 0, proofs: 0, staleEpoch: 0, gaps: 0, fallbacks: 0, distrusted: 0 });

/** What a fleet watcher (its looking side and its consuming side) needs of a delete engine (`DeleteEngine` is one). */
export interface FleetEngine extends DeleteEngineFleet {
  readonly clock: Clock;
  /** Its client's logger (the fleet's warnings go there). */
  readonly api: { readonly logger: Logger };
  readonly novaOffsetMs: number | undefined;
  watch(serverId: string, spec: WatchSpec): Promise<WatchEnd>;
  noteNovaDate(serverDateMs: number | undefined, serverId?: string): void;
  fleetObserved(serverId: string, obs: Observation | undefined): boolean;
}
