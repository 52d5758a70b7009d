/**
 * The delete engine's end of a fleet link (`fleet.ts` defines the port): the one link attached, the
 * interest it registers, the publications it hands in, and which servers it answers for. One per
 * engine; the engine's `attachFleet`, `interest`, `fleetChanged` and `fleetObserved` are this object's.
 *
 * @module
 */
import type { Clock } from '../core/clock.js';
import { ValidationError } from '../errors/index.js';
import { fleetProofIsGone } from './evidence.js';
import { fleetCovers, interestOf, type FleetInterest, type FleetLink } from './fleet.js';
import type { ServerMemory } from './memory.js';
import { showsDeleted, type Observation } from './observe.js';
import type { Entry } from './watch.js';

/** What an {@link EngineFleet} reads and calls of its engine. */
export interface EngineFleetInit {
  /** The engine's clock. */
  readonly clock: Clock;
  /** The engine's servers with pending waits (read only: the engine owns them). */
  readonly entries: ReadonlyMap<string, Entry>;
  /** The engine's memory of servers: what a published status would end a delete wait with. */
  readonly memory: ServerMemory;
  /** A wait's interval where its 404 is near, in ms (its confirm interval, or the short one while a create waits: `ShortLooks.nearOf`). */
  readonly nearOf: (w: { readonly confirmIntervalMs: number; readonly until?: unknown }) => number;
  /** Hand a look the fleet answered to the waits of its server (`DeleteEngine`'s delivery). */
  readonly deliver: (entry: Entry, obs: Observation) => void;
  /** The waits' schedule changed: the engine sets its timer again (unless a tick runs: its end does). */
  readonly wake: () => void;
}

/** The engine's end of a fleet link (see the module). */
export class EngineFleet {
  readonly #d: EngineFleetInit;
  #link: FleetLink | undefined;

  constructor(init: EngineFleetInit) {
    this.#d = init;
  }

  /**
   * Attach `link` (one at a time).
   * @returns the function that detaches it (the waits it answered for look by themselves at once).
   * @throws {@link ValidationError} when another link is attached.
   */
  attach(link: FleetLink): () => void {
    if (this.#link !== undefined && this.#link !== link) throw new ValidationError('a fleet link is attached to this client already: one fleet per client (a Redis ledger with fleetWatcher, or one InProcessFleet)');
    this.#link = link;
    return () => void (this.#link === link && ((this.#link = undefined), this.changed()));
  }

  /** Whether a link is attached (one fleet per client: a ledger's default fleet watcher stays off when one is). */
  get attached(): boolean {
    return this.#link !== undefined;
  }

  /** Whether the fleet answers for `entry`'s server now (`fleetCovers`): it then gets no looks of its own. */
  covers(entry: Entry): boolean {
    return fleetCovers(this.#link, entry);
  }

  /** The servers the engine's delete waits wait on (see `fleet.ts`). */
  interest(): FleetInterest[] {
    return interestOf(this.#d.entries.values(), this.#d.clock.now(), this.#d.nearOf);
  }

  /** The engine's waits changed (one started or ended, or their intervals): the link registers the new interest. */
  interestChanged(): void {
    this.#link?.interestChanged();
  }

  /** The link started or stopped consuming: a wait the fleet no longer answers for looks at once. */
  changed(): void {
    const now = this.#d.clock.now();
    for (const e of this.#d.entries.values()) if (!this.covers(e)) for (const w of e.watches) w.nextAt = Math.min(w.nextAt, now);
    this.#d.wake();
  }

  /**
   * What the fleet watcher published about `serverId`: a proof of deletion (`evidence.ts`, rule 2)
   * ends its waits; a body is a look only while the fleet {@link covers} it; `undefined` (the watcher
   * cannot answer for it: its look failed, or found an orphan) makes its waits look by themselves.
   * @returns whether it was taken.
   */
  observed(serverId: string, obs: Observation | undefined): boolean {
    const entry = this.#d.entries.get(serverId);
    if (entry && obs === undefined) return ((entry.fleetOff = true), this.changed(), true);
    if (!entry || !obs || (obs.gone ? !fleetProofIsGone(obs.evidence) : !this.covers(entry))) return false;
    // A status that would end a delete wait (ERROR or SOFT_DELETED with no task) may come from a look the
    // watcher sent before this host's DELETE was accepted: the waits on it look by themselves instead.
    if (!obs.gone && entry.watches.some((w) => !w.until) && this.#d.memory.classify(serverId, obs) !== undefined) return ((entry.fleetOff = true), this.changed(), true);
    this.#d.deliver(entry, obs);
    this.#d.wake();
    return true;
  }

  /**
   * The engine's own `GET /servers/{id}`, sent at clock time `sentAt`, answered `obs`: when it found
   * the server alive (not `DELETED`), the link reconciles that with the proofs it took (`fleetConsumer.ts`).
   */
  ownLook(serverId: string, obs: Observation, sentAt: number): void {
    if (!obs.gone && !showsDeleted(obs)) this.#link?.ownLookAlive?.(serverId, sentAt);
  }
}
