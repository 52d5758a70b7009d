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
 *   monotonic, so a deposed watcher's 404 or proved absence is still true (`evidence.ts`, rule 3);
 *   its statuses and "cannot answer" items are dropped, and it moves neither the sequence nor the
 *   stall clock.
 * - **Proofs always, states while consuming.** A proof of deletion (`'not-found'` or `'absent'`,
 *   rule 3 of `evidence.ts`, judged again by the engine) ends the waits of its server whenever it
 *   arrives: deletion is monotonic. A server's status is a look only while the host consumes.
 *
 * @module
 */
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { Server } from '../core/types.js';
import type { FleetEngine, FleetPublication, FleetStats } from './fleet.js';
import type { GoneEvidence } from './types.js';

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
    if (epoch < this.#maxEpoch) {
      this.#d.stats.staleEpoch++;
      for (const it of pub.items) if ('g' in it) this.#proof(it);
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
      if ('g' in it) {
        this.#proof(it);
      } else if ('x' in it) {
        engine.fleetObserved(it.i, undefined);
      } else if (this.#consuming && typeof it.s === 'object' && it.s !== null) {
        engine.fleetObserved(it.i, { gone: false, server: { ...it.s, id: it.i } as Server });
      }
    }
    if (!this.#gapSeen && !this.#consuming) this.#resume();
  }

  /** A proof of deletion, whatever the epoch: it ends the waits on its server (the engine judges it again). */
  #proof(it: { i: string; g: GoneEvidence }): void {
    if (this.#d.engine.fleetObserved(it.i, { gone: true, evidence: it.g })) this.#d.stats.proofs++;
  }

  #resume(): void {
    this.#consuming = true;
    this.#d.logger.info('fleet watcher: consuming the publications');
    this.#d.catchUp();
    this.#d.engine.fleetChanged();
  }
}
