/**
 * The one place every timer of a {@link FakeNova} goes through, so `close()` can clear them all.
 * Timers run on {@link systemClock}, which reads the global timers at each call, so
 * `vi.useFakeTimers()` drives builds, deletes, `DELETED` windows and delayed faults. Timers are
 * `unref()`'d: a fake that was never closed does not keep the process alive.
 *
 * @module
 */
import { systemClock, type TimerHandle } from '../../core/clock.js';

/** A set of pending timers that can be cleared at once. */
export class TimerSet {
  private readonly pending = new Set<TimerHandle>();
  private closed = false;

  /**
   * Run `fn` after `delayMs` milliseconds. With `delayMs <= 0` it runs synchronously, so a fake with
   * zero delays is deterministic. After {@link TimerSet.clear} nothing runs any more.
   */
  after(delayMs: number, fn: () => void): void {
    if (this.closed) return;
    if (delayMs <= 0) {
      fn();
      return;
    }
    this.schedule(delayMs, fn);
  }

  /** Like {@link TimerSet.after}, but always asynchronous (at least one event-loop turn). */
  later(delayMs: number, fn: () => void): void {
    if (this.closed) return;
    this.schedule(Math.max(0, delayMs), fn);
  }

  /** Number of pending timers. */
  get size(): number {
    return this.pending.size;
  }

  /** Clear every pending timer and refuse new ones. */
  clear(): void {
    this.closed = true;
    for (const t of this.pending) systemClock.clearTimeout(t);
    this.pending.clear();
  }

  private schedule(delayMs: number, fn: () => void): void {
    const t = systemClock.setTimeout(() => {
      this.pending.delete(t);
      if (!this.closed) fn();
    }, delayMs);
    (t as { unref?: () => void }).unref?.();
    this.pending.add(t);
  }
}
