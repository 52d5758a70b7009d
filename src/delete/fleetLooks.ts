/**
 * The looking side of a fleet watcher, whatever carries its interest and publications (a Redis
 * stream in `nova-guard/redis`, calls in one process in `inProcessFleet.ts`): given the servers the
 * fleet waits on, it runs one wait of the watching host's own engine per server (its listings, GETs,
 * schedule, rate limit, poll pace and rules of evidence: exactly a host's own looks) and turns what
 * those waits observe into publication items ({@link Published}).
 *
 * - A wait of its own per server wanted, until Nova's 404 (`until: obs.gone`; an absence from a listing only triggers that GET),
 *   so an ERROR or SOFT_DELETED status is published, never taken as the end), the interest's
 *   deadline, or the interest going (aborted at the next {@link FleetLooks.follow}).
 * - A server proved gone (its proof published) is not watched again while the fleet's interest in it
 *   lasts: a host that still registers it has the proof in the publications, or from the proofs the
 *   carrier keeps, so the one GET that proved it serves the whole fleet.
 * - A server whose looks kept failing, or which turned out an orphan, is published as "cannot
 *   answer" (`x`): the hosts waiting on it look by themselves; it is not watched again while the
 *   fleet's interest in it lasts.
 * - A status item carries the fields a delete wait reads, or the whole body when a wait on the
 *   server reads more ({@link FleetInterest.whole}: the guard's ACTIVE wait returns the body), less
 *   its user data (`OS-EXT-SRV-ATTR:user_data`, which an admin's GET shows and which may hold secrets).
 *
 * @module
 */
import type { Server } from '../core/types.js';
import type { FleetEngine, Published } from './fleet.js';
import type { Observation } from './types.js';

/** The fields of a server a status item carries when no wait reads the whole body (what delete waits read). */
export const PUBLISHED_FIELDS = ['status', 'OS-EXT-STS:task_state', 'OS-EXT-STS:vm_state', 'updated', 'fault', 'progress', 'tenant_id'] as const;

/** The field of a server body that holds its user data, never published (see {@link FleetLooks}). */
export const USER_DATA_KEY = 'OS-EXT-SRV-ATTR:user_data';

/** Failed looks in a row a fleet wait tolerates before it publishes that it cannot answer. */
const FLEET_POLL_RETRIES = 4;

/**
 * A fleet wait is started again when the fleet's interest in its server reaches this much later than
 * its deadline, in ms (a later wait with a longer timeout). Less is the carrier's rounding (Redis
 * registers deadlines on its own clock, to the ms), not a new wait.
 */
const EXTEND_SLACK_MS = 1000;

/** One server the fleet waits on, as the watcher reads it (durations in ms). */
export interface WantedServer {
  /** Time until the latest deadline of the waits on it. */
  readonly remainingMs: number;
  readonly intervalMs: number;
  readonly confirmIntervalMs: number;
  /** A wait on it reads the whole body (see {@link FleetInterest.whole}). */
  readonly whole?: boolean | undefined;
}

/** Merge one host's interest in a server into `wanted` (latest deadline, smallest intervals, whole if any wants it). */
export function wantServer(wanted: Map<string, WantedServer>, serverId: string, w: WantedServer): void {
  const had = wanted.get(serverId);
  wanted.set(serverId, {
    remainingMs: Math.max(w.remainingMs, had?.remainingMs ?? 0),
    intervalMs: Math.min(w.intervalMs, had?.intervalMs ?? Number.POSITIVE_INFINITY),
    confirmIntervalMs: Math.min(w.confirmIntervalMs, had?.confirmIntervalMs ?? Number.POSITIVE_INFINITY),
    whole: w.whole === true || had?.whole === true,
  });
}

/** One fleet wait of the watching host: how to stop it, and what it was started with (clock time and ms). */
interface FleetWait {
  readonly controller: AbortController;
  whole: boolean;
  readonly deadlineAt: number;
  readonly intervalMs: number;
  readonly confirmIntervalMs: number;
}

/** The watching host's looks for the fleet (see the module). */
export class FleetLooks {
  /** The fleet waits of the engine, by server. */
  readonly #watches = new Map<string, FleetWait>();
  /** Servers this host cannot answer for (published so): not watched again while the interest lasts. */
  readonly #givenUp = new Set<string>();
  /** Servers whose proof of deletion this host published: not watched again while the interest lasts. */
  readonly #proved = new Set<string>();

  /**
   * @param engine - The watching host's engine.
   * @param publish - Takes each item to publish (the carrier batches them).
   */
  constructor(
    private readonly engine: FleetEngine,
    private readonly publish: (item: Published) => void,
  ) {}

  /** Servers watched now. */
  get watched(): number {
    return this.#watches.size;
  }

  /**
   * Follow the fleet's interest now: stop watching what nobody waits on, start what is new, and start
   * again (the new wait first, so the engine keeps what it knows of the server) a server whose interest
   * now reaches past its fleet wait's deadline or asks for other intervals (a wait with a shorter one
   * came, or went; short looks while a create waits): a wait that came later with a longer timeout
   * would otherwise get no look after the first one's deadline.
   */
  follow(wanted: ReadonlyMap<string, WantedServer>): void {
    const now = this.engine.clock.now();
    for (const [id, w] of [...this.#watches]) {
      const want = wanted.get(id);
      if (!want) {
        w.controller.abort(new Error('nobody waits on it'));
        this.#watches.delete(id);
        continue;
      }
      w.whole = want.whole === true;
      if (now + want.remainingMs > w.deadlineAt + EXTEND_SLACK_MS || want.intervalMs !== w.intervalMs || want.confirmIntervalMs !== w.confirmIntervalMs) {
        this.#watchFor(id, want);
        w.controller.abort(new Error('watched again for a later deadline or other intervals'));
      }
    }
    for (const id of this.#givenUp) if (!wanted.has(id)) this.#givenUp.delete(id);
    for (const id of this.#proved) if (!wanted.has(id)) this.#proved.delete(id);
    for (const [id, w] of wanted) if (id !== '' && !this.#watches.has(id) && !this.#givenUp.has(id) && !this.#proved.has(id) && w.remainingMs > 0) this.#watchFor(id, w);
  }

  /** Stop every fleet wait (this host no longer watches, or closes). */
  stop(reason: string): void {
    for (const w of this.#watches.values()) w.controller.abort(new Error(reason));
    this.#watches.clear();
    this.#givenUp.clear();
    this.#proved.clear();
  }

  #watchFor(serverId: string, w: WantedServer): void {
    const controller = new AbortController();
    const deadlineAt = this.engine.clock.now() + w.remainingMs;
    const watch: FleetWait = { controller, whole: w.whole === true, deadlineAt, intervalMs: w.intervalMs, confirmIntervalMs: w.confirmIntervalMs };
    this.#watches.set(serverId, watch);
    this.engine
      .watch(serverId, {
        intervalMs: w.intervalMs,
        confirmIntervalMs: w.confirmIntervalMs,
        jitter: 0.1,
        deadlineAt,
        requestTimeoutMs: undefined,
        pollRetries: FLEET_POLL_RETRIES,
        signal: controller.signal,
        // The watcher's own: never the fleet's interest; it ends at the proof.
        fleetWatch: true,
        // An ACTIVE wait registered it (the whole body): a server just created; else a deletion was requested.
        phase: w.whole === true ? 'building' : 'deleting',
        until: (obs) => obs.gone,
        onObservation: (obs) => void (!controller.signal.aborted && this.#observed(serverId, obs, watch.whole)),
      })
      .catch((error: unknown) => {
        // Its looks kept failing, or found an orphan: the hosts waiting on it look by themselves.
        if (controller.signal.aborted) return;
        this.#givenUp.add(serverId);
        this.publish({ i: serverId, x: error instanceof Error ? error.name : 'Error' });
      })
      .finally(() => void (this.#watches.get(serverId) === watch && this.#watches.delete(serverId)));
  }

  #observed(serverId: string, obs: Observation, whole: boolean): void {
    if (obs.gone) {
      if (obs.evidence !== undefined) {
        this.#proved.add(serverId);
        this.publish({ i: serverId, g: obs.evidence });
      }
      return;
    }
    if (whole) {
      // The whole body but the user data (an admin's GET shows it from microversion 2.3): cloud-init
      // scripts carry secrets, and a publication is stored on the carrier (a Redis stream) for minutes.
      const { [USER_DATA_KEY]: _userData, ...s } = obs.server as Server & Record<string, unknown>;
      return this.publish({ i: serverId, s });
    }
    const s: Partial<Server> = {};
    for (const k of PUBLISHED_FIELDS) if (obs.server[k] !== undefined) (s as Record<string, unknown>)[k] = obs.server[k];
    this.publish({ i: serverId, s });
  }
}
