/**
 * One virtual clock for a whole simulated fleet: a discrete-event loop that runs every microtask
 * until the process is idle, then jumps to the next timer, never sleeping on the wall clock.
 *
 * It is nova-guard's {@link Clock} (given to every client and ledger as `clock`) and, while
 * installed, also the process's global `setTimeout`/`clearTimeout`, `Date` and `performance.now()`:
 * FakeNova, its in-process adapter, p-retry and p-throttle read those globals, so every timer of the
 * simulation (Nova's builds and deletes, request pacing, backoff, polls, leases) lands in the one
 * queue here. Timers are kept in a binary heap (earliest first, then in the order they were set),
 * so a step costs O(log timers) however many workers wait.
 *
 * @module
 */
import type { Clock } from 'nova-guard';
import { MinHeap } from './minHeap.js';

type TimerHandle = ReturnType<Clock['setTimeout']>;

/** One pending timer. */
class VirtualTimer {
  cancelled = false;
  constructor(
    readonly at: number,
    readonly seq: number,
    readonly fn: (...args: unknown[]) => void,
    readonly args: unknown[],
  ) {}
  // The shape of Node's Timeout that callers use.
  unref(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  hasRef(): boolean {
    return true;
  }
  [Symbol.toPrimitive](): number {
    return this.seq;
  }
}

const realSetImmediate = globalThis.setImmediate;

/** Resolve after every queued microtask (and `process.nextTick`) has run: one real event-loop turn. */
function idle(): Promise<void> {
  return new Promise((resolve) => realSetImmediate(resolve));
}

/** Wall-clock start of every simulation: a Monday 06:00 UTC (any fixed value would do). */
export const SIM_EPOCH_MS = Date.UTC(2026, 0, 5, 6, 0, 0);

/** A virtual clock and its event loop (see the module description). */
export class VirtualTime {
  /** The simulation's clock, to give to nova-guard as its `clock` option. */
  readonly clock: Clock;
  #now = 0;
  #seq = 0;
  #live = 0;
  #steps = 0;
  readonly #heap = new MinHeap<VirtualTimer>(before);
  #restore: (() => void) | undefined;

  constructor() {
    this.clock = {
      now: () => this.#now,
      wallNow: () => SIM_EPOCH_MS + this.#now,
      setTimeout: (fn, delayMs) => this.setTimeout(fn, delayMs),
      clearTimeout: (handle) => this.clearTimeout(handle),
    };
  }

  /** Virtual ms since the start. */
  get now(): number {
    return this.#now;
  }

  /** Timers run so far. */
  get steps(): number {
    return this.#steps;
  }

  /** Timers pending (not cancelled). */
  get pending(): number {
    return this.#live;
  }

  /** Arm a timer `delayMs` virtual ms from now (at least the current instant). */
  setTimeout(fn: (...args: unknown[]) => void, delayMs: number | undefined, ...args: unknown[]): TimerHandle {
    const d = Number.isFinite(delayMs) && (delayMs as number) > 0 ? (delayMs as number) : 0;
    const t = new VirtualTimer(this.#now + d, ++this.#seq, fn, args);
    this.#push(t);
    this.#live++;
    return t as unknown as TimerHandle;
  }

  /** Cancel a timer of {@link VirtualTime.setTimeout}; anything else is ignored. */
  clearTimeout(handle: unknown): void {
    if (handle instanceof VirtualTimer && !handle.cancelled) {
      handle.cancelled = true;
      this.#live--;
    }
  }

  /**
   * Make this clock the process's timers, `Date` and `performance.now()` until {@link VirtualTime.uninstall}.
   * `setInterval` is refused (nothing in the simulated code uses it; a silent real interval would
   * break the virtual schedule).
   */
  install(): void {
    if (this.#restore) return;
    const g = globalThis as unknown as Record<string, unknown>;
    const saved = { setTimeout: g.setTimeout, clearTimeout: g.clearTimeout, setInterval: g.setInterval, Date: g.Date };
    const perfNow = Object.getOwnPropertyDescriptor(performance, 'now');
    // No stack traces while simulating: the code under test makes an Error (AbortSignal reasons,
    // p-timeout's TimeoutError) on every wake-up of a waiting call, and nothing reads their stacks.
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    const RealDate = Date;
    const wall = (): number => SIM_EPOCH_MS + this.#now;
    class VirtualDate extends RealDate {
      constructor(...args: unknown[]) {
        if (args.length === 0) super(wall());
        else super(...(args as [number]));
      }
      static override now(): number {
        return wall();
      }
    }
    g.setTimeout = (fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) => this.setTimeout(fn, ms, ...args);
    g.clearTimeout = (h: unknown) => this.clearTimeout(h);
    g.setInterval = () => {
      throw new Error('setInterval is not available in the fleet simulation');
    };
    g.Date = VirtualDate;
    Object.defineProperty(performance, 'now', { value: () => this.#now, configurable: true, writable: true });
    this.#restore = () => {
      Error.stackTraceLimit = stackTraceLimit;
      Object.assign(g, saved);
      if (perfNow) Object.defineProperty(performance, 'now', perfNow);
      else delete (performance as unknown as Record<string, unknown>).now;
    };
  }

  /** Give the process its real timers, `Date` and `performance.now()` back. */
  uninstall(): void {
    this.#restore?.();
    this.#restore = undefined;
  }

  /**
   * The event loop: let every microtask run, stop when `done()`, else jump to the next timer and run
   * it; repeat. Throws when nothing is pending and `done()` is still false (a deadlock), or past
   * `limitMs` of virtual time.
   */
  async run(done: () => boolean, limitMs = Number.POSITIVE_INFINITY): Promise<void> {
    for (;;) {
      await idle();
      if (done()) return;
      const t = this.#pop();
      if (!t) throw new Error(`simulation stuck at ${Math.round(this.#now)} ms: nothing pending and not done`);
      if (t.at > limitMs) throw new Error(`simulation ran past its limit of ${limitMs} virtual ms`);
      this.#now = t.at;
      this.#steps++;
      t.fn(...t.args);
    }
  }

  #push(t: VirtualTimer): void {
    this.#heap.push(t);
  }

  #pop(): VirtualTimer | undefined {
    for (let top = this.#heap.pop(); top !== undefined; top = this.#heap.pop()) {
      if (!top.cancelled) {
        this.#live--;
        return top;
      }
    }
    return undefined;
  }
}

function before(a: VirtualTimer, b: VirtualTimer): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}
