/**
 * The consuming side of a fleet watcher, whatever carries the publications (a Redis stream in
 * `nova-guard/redis`, calls in one process in `inProcessFleet.ts`): one host takes the watcher's
 * publications in order and hands them to its engine.
 *
 * - **In sequence and in time, or not at all.** Every publication carries a sequence number (one
 *   counter for every epoch of the watcher). A number skipped is a gap; no publication for `stallMs`
 *   while consuming ({@link FleetConsumer.checkStall}) is a stall. Either way the host falls back to
 *   its own looks at once, with one warning and one count in {@link FleetStats.fallbacks}, and
 *   consumes again at the next publication in sequence (after a gap: not within the same read, so
 *   the waits look by themselves at least once), after catching up on the proofs it may have missed
 *   (`catchUp`).
 * - **Fencing.** A publication of an older epoch than one already seen (a deposed watcher) is
 *   counted ({@link FleetStats.staleEpoch}) and ignored but for its proofs of deletion: deletion is
 *   monotonic, so a deposed watcher's 404 is still true (`evidence.ts`, rule 2); its statuses and
 *   "cannot answer" items are dropped, and it moves neither the sequence nor the stall clock.
 * - **Proofs always, states while consuming.** A proof of deletion (`'not-found'`, rule 2 of
 *   `evidence.ts`, judged again by the engine; an `'absent'` of a watcher from before absence
 *   stopped being proof is no proof) ends the waits of its server whenever it arrives: deletion is
 *   monotonic. A server's status is a look only while the host consumes.
 * - **Reconciled, or dropped.** The host remembers the proofs it took (10 minutes). A proof it
 *   cannot reconcile with what Nova told it since, a server it proved gone answering 200 with a live
 *   status (not `DELETED`) to this host's own GET sent after the proof was taken, or shown so in a
 *   later publication, means that watcher publishes false proofs (a bug, an older version, a proxy
 *   or cache in front of its Nova): deletion is monotonic, so both cannot be true. The host then drops
 *   that watcher's proofs: every publication of its epoch and of the older ones is ignored (proofs,
 *   statuses, kept proofs), it falls back to its own looks at once, with one warning and one count
 *   in {@link FleetStats.distrusted}, and consumes again only the publications of a newer epoch (a
 *   watcher elected since). The scope is the epoch: one election of one watcher host, the unit the
 *   fleet already fences by; a later election may be another host, with a sound look. The waits
 *   the false proof ended before it was found out cannot be taken back; the rest get own looks.
 *
 * @module
 */
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { Server } from '../core/types.js';
import { statusOf } from '../core/counting.js';
import type { FleetEngine, FleetPublication, FleetStats } from './fleet.js';
import { fleetProofIsGone } from './evidence.js';

/** How long a proof taken is remembered, to reconcile it with later looks, in ms (as long as the fleet keeps proofs). */
const PROOF_MEMORY_MS = 10 * 60_000;

/** What a {@link FleetConsumer} needs. */
export interface FleetConsumerInit {
  readonly engine: FleetEngine;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly stats: FleetStats;
  /** No publication for this long (ms) while consuming is a stall (`Infinity`: publications cannot stall). */
  readonly stallMs: number;
  /** Catch up on the proofs of the servers waited on (after a gap or a stall). */
  readonly catchUp: () => void;
  /** What carries the publications, as a stall's warning names it. @default 'its carrier' */
  readonly carrier?: string;
}

/** The consuming side of one host (see the module). */
export class FleetConsumer {
  readonly #d: FleetConsumerInit;
  #lastSeq: number | undefined;
  #maxEpoch = 0;
  #lastAt: number;
  #consuming = false;
  /** A gap in this read: no resuming before the next read (the waits look by themselves meanwhile). */
  #gapSeen = false;
  /** The proofs taken lately, by server id: the epoch that published each and the clock time it was taken (oldest first). */
  readonly #taken = new Map<string, { epoch: number; at: number }>();
  /** Publications of this epoch and older ones are ignored: a proof of theirs was found false (0: none). */
  #distrustedEpoch = 0;

  constructor(init: FleetConsumerInit) {
    this.#d = init;
    this.#lastAt = init.clock.now();
  }

  /** True while publications arrive in sequence and in time. */
  get consuming(): boolean {
    return this.#consuming;
  }

  /** The highest epoch seen (from the lease or a publication). */
  get maxEpoch(): number {
    return this.#maxEpoch;
  }

  /** Clock time of the last publication taken (or of the last start). */
  get lastAt(): number {
    return this.#lastAt;
  }

  /** An epoch seen elsewhere (the lease): publications of older ones are ignored. */
  sawEpoch(epoch: number): void {
    this.#maxEpoch = Math.max(this.#maxEpoch, epoch);
  }

  /** Stop consuming now (this host became the watcher, or closes): no warning. */
  stop(): void {
    this.#consuming = false;
    this.#lastAt = this.#d.clock.now();
  }

  /** Start over at publication `seq` (its contents unused: only what follows it), e.g. the newest of a new stream. */
  restartAt(seq: number | undefined): void {
    this.#lastSeq = seq;
    this.#lastAt = this.#d.clock.now();
  }

  /** Fall back to own looks, with one warning and one count per episode. */
  fallBack(reason: string): void {
    if (!this.#consuming) return;
    this.#consuming = false;
    this.#d.stats.fallbacks++;
    this.#d.logger.warn({ reason }, `fleet watcher: ${reason}: this host looks by itself until the publications resume`);
    this.#d.engine.fleetChanged();
  }

  /** A new read begins (a gap seen in the last one no longer holds the resume back). */
  beginRead(): void {
    this.#gapSeen = false;
  }

  /** While consuming, no publication for `stallMs` falls back. */
  checkStall(): void {
    if (this.#consuming && this.#d.clock.now() - this.#lastAt > this.#d.stallMs) this.fallBack(`no publication within ${this.#d.stallMs} ms (watcher stalled, or ${this.#d.carrier ?? 'its carrier'} slow or down)`);
  }

  /** Take one publication, in the order they were read. */
  take(pub: FleetPublication): void {
    const { seq, epoch } = pub;
    const prev = this.#lastSeq;
    const gap = prev !== undefined && seq > prev + 1;
    if (prev === undefined || seq > prev) this.#lastSeq = seq;
    if (epoch <= this.#distrustedEpoch) {
      // A watcher whose proofs were found false: nothing of it is used (it stays in sequence).
      this.#lastAt = this.#d.clock.now();
      return;
    }
    if (epoch < this.#maxEpoch) {
      this.#d.stats.staleEpoch++;
      for (const it of pub.items) if ('g' in it) this.proof(it.i, it.g, epoch);
      return;
    }
    this.#maxEpoch = epoch;
    this.#lastAt = this.#d.clock.now();
    if (gap) {
      this.#d.stats.gaps++;
      this.#gapSeen = true;
      this.fallBack(`a gap in the publications' sequence numbers (${seq - (prev ?? seq) - 1} missed before ${seq})`);
    }
    const engine = this.#d.engine;
    if (pub.novaDateMs !== undefined && Number.isFinite(pub.novaDateMs)) engine.noteNovaDate(pub.novaDateMs);
    this.#d.stats.consumed++;
    for (const it of pub.items) {
      if (epoch <= this.#distrustedEpoch) return; // found false within this publication
      if ('g' in it) {
        this.proof(it.i, it.g, epoch);
      } else if ('x' in it) {
        engine.fleetObserved(it.i, undefined);
      } else if (typeof it.s === 'object' && it.s !== null) {
        // A live status after a proof of it: that proof was false (deletion is monotonic).
        if (this.#liveStatus(it.s)) this.#reconcile(it.i, this.#d.clock.now(), `publication ${seq} of epoch ${epoch} shows it ${String(it.s.status)}`);
        if (this.#consuming && epoch > this.#distrustedEpoch) engine.fleetObserved(it.i, { gone: false, server: { ...it.s, id: it.i } as Server });
      }
    }
    if (!this.#gapSeen && !this.#consuming && epoch > this.#distrustedEpoch) this.#resume();
  }

  /**
   * A proof of deletion published by the watcher of `epoch` (in a publication, or kept by the carrier
   * for a server registered late), whatever the epoch but a distrusted one: it ends the waits on its
   * server (the engine judges `evidence` again: only `'not-found'` counts) and is remembered, to be
   * reconciled with later looks.
   * @returns true when it ended waits of this host (counted in {@link FleetStats.proofs}).
   */
  proof(serverId: string, evidence: unknown, epoch: number): boolean {
    if (epoch <= this.#distrustedEpoch) return false;
    const now = this.#d.clock.now();
    for (const [id, t] of this.#taken) {
      if (now - t.at <= PROOF_MEMORY_MS) break;
      this.#taken.delete(id);
    }
    if (!fleetProofIsGone(evidence)) return false;
    // Remembered whether or not it ended a wait here: it says what that watcher takes for gone.
    this.#taken.delete(serverId);
    this.#taken.set(serverId, { epoch, at: now });
    if (!this.#d.engine.fleetObserved(serverId, { gone: true, evidence })) return false;
    this.#d.stats.proofs++;
    return true;
  }

  /**
   * This host's own `GET /servers/{id}`, sent at clock time `sentAt`, found `serverId` alive (a body
   * whose status is not `DELETED`): a proof of it taken before `sentAt` was false, and its watcher's
   * proofs are dropped (see the module).
   */
  ownLookAlive(serverId: string, sentAt: number): void {
    this.#reconcile(serverId, sentAt, 'this host\'s own GET found it alive');
  }

  /** True when a published status shows a server alive (any status but `DELETED`). */
  #liveStatus(s: Partial<Server>): boolean {
    return typeof s.status === 'string' && statusOf(s as Server) !== 'DELETED';
  }

  /** `serverId` was seen alive by a look that started at clock time `since`: a proof of it taken at or before then was false. */
  #reconcile(serverId: string, since: number, how: string): void {
    const t = this.#taken.get(serverId);
    if (t === undefined || t.at > since || t.epoch <= this.#distrustedEpoch) return;
    this.#distrustedEpoch = t.epoch;
    for (const [id, p] of this.#taken) if (p.epoch <= t.epoch) this.#taken.delete(id);
    this.#d.stats.distrusted++;
    this.#d.logger.warn(
      { serverId, epoch: t.epoch, how },
      `fleet watcher: the watcher of epoch ${t.epoch} published a proof of deletion that Nova contradicts (${how} after the proof): its proofs are dropped, this host looks by itself until a newer watcher publishes`,
    );
    if (this.#consuming) {
      this.#consuming = false;
      this.#d.engine.fleetChanged();
    }
  }

  #resume(): void {
    this.#consuming = true;
    this.#d.logger.info('fleet watcher: consuming the publications');
    this.#d.catchUp();
    this.#d.engine.fleetChanged();
  }
}
