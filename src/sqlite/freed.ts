/**
 * "Quota freed" wake-ups of the SQLite ledger: a deletion confirmed in any process of the host
 * raises `freed_count` in the file; every ledger with listeners polls it (a plain read: WAL readers
 * never wait for the writer) and wakes its listeners when another process raised it. The
 * publishing process's own listeners are woken at once, never twice.
 *
 * @module
 */
import type { Clock, TimerHandle } from '../core/index.js';
import { callEach } from '../core/listeners.js';
import type { LedgerStore } from './store.js';

/** The listeners of one ledger and the poll that wakes them. */
export class FreedWatch {
  readonly #listeners = new Set<() => void>();
  /** `freed_count` as last read (`undefined` until the file could be read: the first poll takes it as it is). */
  #seen: number | undefined;
  /** Deletions this process published since the last poll (its listeners heard of them at once). */
  #own = 0;
  #poll: TimerHandle | undefined;
  #closed = false;

  /**
   * @param store - The ledger file.
   * @param clock - Timers of the poll.
   * @param pollIntervalMs - Time between two reads of `freed_count`, in ms.
   */
  constructor(
    private readonly store: LedgerStore,
    private readonly clock: Clock,
    private readonly pollIntervalMs: number,
  ) {
    try {
      this.#seen = store.freedCount();
    } catch {
      this.#seen = undefined; // locked while it is created: the first poll reads it
    }
  }

  /** Listen; returns the unsubscribe function. */
  add(listener: () => void): () => void {
    const wrapped = (): void => listener();
    this.#listeners.add(wrapped);
    this.#schedule();
    return () => this.#listeners.delete(wrapped);
  }

  /** This process is about to publish a deletion: its listeners now. */
  notifyOwn(): void {
    this.#notify();
  }

  /** This process raised `freed_count` by one. */
  published(): void {
    this.#own++;
  }

  /** Stop polling and forget the listeners. */
  close(): void {
    this.#closed = true;
    this.clock.clearTimeout(this.#poll);
    this.#listeners.clear();
  }

  #notify(): void {
    callEach(this.#listeners);
  }

  #schedule(): void {
    if (this.#poll !== undefined || this.#closed || this.#listeners.size === 0) return;
    this.#poll = this.clock.setTimeout(() => {
      this.#poll = undefined;
      if (this.#closed) return;
      try {
        const count = this.store.freedCount();
        const foreign = this.#seen === undefined ? 0 : count - this.#seen - this.#own;
        this.#seen = count;
        this.#own = 0;
        if (foreign > 0) this.#notify();
      } catch {
        // the next poll tries again
      }
      this.#schedule();
    }, this.pollIntervalMs);
    (this.#poll as { unref?: () => void }).unref?.();
  }
}
