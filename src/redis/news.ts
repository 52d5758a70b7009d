/**
 * The news one Redis ledger hears on its two channels, and who it tells: "quota freed" (a deletion
 * confirmed on any host: every `onFreed` listener, and the oldest waiting place of this process,
 * see `PlaceWakes`) and "kept reading refreshed" (its order number: noted as a reading known stored,
 * `KeptSeen`; then the callers waiting for another holder's read).
 *
 * @module
 */
import type { Clock } from '../core/index.js';
import { callEach } from '../core/listeners.js';
import { AbortError } from '../errors/index.js';
import { PlaceWakes } from '../ledger/index.js';
import type { KeptSeen } from './keptSeen.js';

/** The listeners of one ledger object for the messages of its scope's channels. */
export class LedgerNews {
  readonly #freed = new Set<() => void>();
  readonly #limitsWaiters = new Set<() => void>();
  /** The wake-ups addressed to this object's places (`QuotaLedger.onWake`). */
  readonly wakes = new PlaceWakes();

  /**
   * @param instance - This ledger object's id: its own "freed" messages come back to it and are skipped.
   * @param limitsChannel - The channel of "kept reading refreshed".
   * @param clock - Timers of {@link LedgerNews.waitForReading}.
   * @param kept - Where the order numbers of "kept reading refreshed" go (a reading stored in Redis).
   */
  constructor(
    private readonly instance: string,
    private readonly limitsChannel: string,
    private readonly clock: Clock,
    private readonly kept: KeptSeen,
  ) {}

  /**
   * A message arrived on `channel` (any other than the limits channel is "quota freed", JSON `{ from }`;
   * on the limits channel, the order number of the reading kept, or `vetted`: ignored by `KeptSeen`).
   */
  message(channel: string, message: string): void {
    if (channel === this.limitsChannel) {
      this.kept.note(message);
      callEach(this.#limitsWaiters);
      return;
    }
    let from: unknown;
    try {
      from = (JSON.parse(message) as { from?: unknown }).from;
    } catch {
      from = undefined;
    }
    if (from !== this.instance) this.freed();
  }

  /** Quota was freed: the oldest waiting place, and every `onFreed` listener. */
  freed(): void {
    this.wakes.wakeHead();
    callEach(this.#freed);
  }

  /** Listen for "quota freed"; returns the unsubscribe function. */
  onFreed(listener: () => void): () => void {
    const wrapped = (): void => listener();
    this.#freed.add(wrapped);
    return () => this.#freed.delete(wrapped);
  }

  /**
   * Wait for a "kept reading refreshed" message or `ms`, whichever comes first.
   * @throws `AbortError` when `signal` aborts.
   */
  waitForReading(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const done = (): void => {
        this.clock.clearTimeout(timer);
        this.#limitsWaiters.delete(done);
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = (): void => {
        done();
        reject(new AbortError(undefined, { cause: signal?.reason }));
      };
      const timer = this.clock.setTimeout(done, ms);
      this.#limitsWaiters.add(done);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
