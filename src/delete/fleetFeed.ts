/**
 * The reading side of a fleet watcher over a {@link FleetStore}: one host reads the publications
 * after the last one it read and hands each, in order, to its {@link FleetConsumer}
 * (`fleetConsumer.ts`: sequence numbers and gaps, stalls, fencing by epoch, proofs always and
 * states while consuming, evidence rule 3).
 *
 * - A read every round: the publications after the last sequence number read. At the first read,
 *   and while not consuming after nothing came for `stallMs`, it starts again from the newest
 *   publication (its contents unused: only what follows it), so a store restarted empty (a new
 *   Redis stream, a new SQLite file) is followed, never waited on.
 * - While consuming, no publication for `stallMs` falls back ({@link FleetConsumer.checkStall}).
 *
 * @module
 */
import { FleetConsumer, type FleetConsumerInit } from './fleetConsumer.js';
import type { FleetStore } from './fleetStore.js';

/** How many publications one read takes at most. */
const READ_COUNT = 500;

/** What a {@link FleetFeed} needs: its consumer's needs (the carrier is the store's) and the store. */
export interface FleetFeedInit extends Omit<FleetConsumerInit, 'carrier'> {
  readonly store: FleetStore;
}

/** The reader of one host (see the module). */
export class FleetFeed {
  readonly #d: FleetFeedInit;
  /** The consumer the publications go to. */
  readonly consumer: FleetConsumer;
  /** The sequence number of the last publication read (`undefined` before the first read). */
  #cursor: number | undefined;

  constructor(init: FleetFeedInit) {
    this.#d = init;
    this.consumer = new FleetConsumer({ ...init, carrier: init.store.carrier });
  }

  /**
   * One read round (see the module).
   * @throws what the store throws; the caller's next round tries again.
   */
  async read(): Promise<void> {
    const consumer = this.consumer;
    consumer.beginRead();
    if (this.#cursor === undefined || (!consumer.consuming && this.#d.clock.now() - consumer.lastAt > this.#d.stallMs)) {
      const newest = await this.#d.store.newest();
      if (newest !== undefined) {
        this.#cursor = newest;
        consumer.restartAt(newest);
      } else {
        this.#cursor ??= 0;
      }
    }
    for (const pub of await this.#d.store.after(this.#cursor, READ_COUNT)) {
      if (Number.isFinite(pub.seq)) this.#cursor = pub.seq;
      consumer.take(pub);
    }
    consumer.checkStall();
  }
}
