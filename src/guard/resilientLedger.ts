/**
 * The fallback ledger as a wrapper: one {@link ResilientLedger} per user ledger instance, shared by
 * every guard of the process that uses that ledger ({@link resilientLedgerFor}). It owns what is
 * stateful about a ledger that may fail: its health (up or down), the private in-process fallback,
 * and the outage and recovery warnings.
 *
 * Down: a rejection marked `ledgerDown` ({@link isLedgerDown}: refused connection, refused
 * password), or {@link TIMEOUTS_FOR_DOWN} time-outs in a row. While down, every call skips the
 * ledger at once (0 ms of ledger time) and goes on with the fallback; the ledger is probed
 * (`ledger.probe()`) at most once per probe
 * interval: 1 s after the outage began, then doubling up to 5 s, each interval jittered down by up
 * to a fifth. Probing is lazy: it is triggered by guard activity, so nothing runs while the guards
 * are idle. One warning when the outage begins, one when a probe finds it back ("is back after N
 * ms"); every guard registered on the wrapper counts the outage in `stats.ledgerOutages`.
 *
 * The wrapper also remembers whether the ledger has ever answered an admission of this process
 * ({@link ResilientLedger.hadGoodReading}): from then on the process takes part in the fleet's
 * accounting, and a call that a ledger failure moved to the fallback waits for the ledger instead
 * of admitting on its own (`degradedUse.ts`).
 *
 * @module
 */
import pTimeout from 'p-timeout';
import { pTimeoutTimers, type Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import { callEach } from '../core/listeners.js';
import { InProcessQuotaLedger } from '../ledger/index.js';
import { isLedgerDown, type QuotaLedger } from '../ledger/index.js';
import type { QuotaGuardStats } from './stats.js';

/** Time-outs in a row after which a ledger counts as down. */
export const TIMEOUTS_FOR_DOWN = 3;
/** First probe interval of a ledger found down, in ms. */
export const FIRST_PROBE_MS = 1000;
/** Longest probe interval, in ms. */
export const MAX_PROBE_MS = 5000;
/**
 * How long a process whose ledger says it never reached its store (`QuotaLedger.everReached`)
 * waits for it at the start of an outage before its creates go on alone, in ms: a store restarting
 * while the process starts comes back within it; one absent costs each process this once.
 */
export const NEVER_REACHED_WAIT_MS = 3000;
/** Most failed cleanups kept to send again at the end of an outage. */
export const MAX_REDO = 1000;

/** One guard as the wrapper sees it: where to count outages and log. */
export interface LedgerUser {
  readonly stats: QuotaGuardStats;
  readonly log: Logger;
}

/** An outage in progress. */
interface Outage {
  readonly sinceMs: number;
  /** When the next probe may start, on the clock (ms). */
  nextProbeMs: number;
  /** The interval after the next probe, before jitter (ms). */
  nextIntervalMs: number;
  /** A probe in flight. */
  probing: boolean;
  /** Probes so far (for the log). */
  probes: number;
}

/** See the module description. */
export class ResilientLedger {
  /** The user's ledger. */
  readonly ledger: QuotaLedger;
  /** The private in-process ledger the calls go on with while `ledger` fails (same holder). */
  readonly fallback: InProcessQuotaLedger;
  readonly #clock: Clock;
  readonly #users = new Set<LedgerUser>();
  #timeouts = 0;
  #outage: Outage | undefined;
  #lastUser: LedgerUser | undefined;
  readonly #recovered = new Set<() => void>();
  #redo: Array<() => Promise<void>> = [];
  /** A failure of the current streak (since the last answer) was already logged as a warning. */
  #streakWarned = false;
  #hadGoodReading = false;
  /** When the current streak of failed calls began (the first failure since the last answer), on the clock. */
  #failingSinceMs: number | undefined;

  constructor(ledger: QuotaLedger, clock: Clock) {
    this.ledger = ledger;
    this.#clock = clock;
    this.fallback = new InProcessQuotaLedger({ clock, holder: ledger.holder });
  }

  /** A guard uses this ledger (counts outages, logs them); {@link detach} at its close. */
  attach(user: LedgerUser): void {
    this.#users.add(user);
    this.#lastUser ??= user;
  }

  /** The guard is closed. */
  detach(user: LedgerUser): void {
    this.#users.delete(user);
    if (this.#lastUser === user) this.#lastUser = this.#users.values().next().value;
  }

  /**
   * True once the ledger has answered an admission of this process (admitted or short: a good
   * reading of it), or says it has reached its store (`QuotaLedger.everReached`): from then on a call
   * moved to the fallback by a ledger failure waits for the ledger (`degradedUse.ts`).
   */
  get hadGoodReading(): boolean {
    if (this.#hadGoodReading) return true;
    try {
      return this.ledger.everReached();
    } catch {
      return false;
    }
  }

  /**
   * True while a process that has no good reading of the ledger (and whose ledger never reached its
   * store: `everReached` false so far) should still wait for it: its calls have not been failing
   * (an outage, or failures that do not make one: rejections that are not `ledgerDown`) for
   * {@link NEVER_REACHED_WAIT_MS} yet.
   */
  get mayReachSoon(): boolean {
    const since = this.#failingSinceMs ?? this.#outage?.sinceMs;
    return since === undefined || this.#clock.now() - since < NEVER_REACHED_WAIT_MS;
  }

  /**
   * The ledger answered an admission of this process. The first time, the recovery listeners run
   * ({@link onRecovered}): claims this process admitted on the fallback before it had a good
   * reading are re-claimed on the ledger.
   */
  noteGoodReading(): void {
    if (this.#hadGoodReading) return;
    this.#hadGoodReading = true;
    this.#emitRecovered();
  }

  /** Listen for the end of an outage (and the first admission on the ledger); returns the unsubscribe function. */
  onRecovered(listener: () => void): () => void {
    this.#recovered.add(listener);
    return () => this.#recovered.delete(listener);
  }

  /**
   * Cleanup that failed on the ledger (`leave`, `release`, `bind`): sent again when an outage ends,
   * so places and claims left behind do not hold the fleet's queue until their leases expire. At
   * most {@link MAX_REDO} are kept (the oldest are dropped: their leases expire them).
   */
  redoWhenBack(work: () => Promise<void>): void {
    this.#redo.push(work);
    if (this.#redo.length > MAX_REDO) this.#redo.shift();
  }

  /** A guard logged a failure of this ledger as a warning: the outage it may lead to is then logged at info level (one warning per outage). */
  noteWarned(): void {
    this.#streakWarned = true;
  }

  /** True while the ledger is down (skipped). */
  get down(): boolean {
    return this.#outage !== undefined;
  }

  /**
   * The time limit of one call of the ledger, in ms: `max(ledgerTimeoutMs, ledger.callBudgetMs())`
   * (the ledger's measured round trips, when it measures them).
   */
  budgetMs(ledgerTimeoutMs: number): number {
    let measured: number | undefined;
    try {
      measured = this.ledger.callBudgetMs();
    } catch {
      measured = undefined;
    }
    return typeof measured === 'number' && Number.isFinite(measured) ? Math.max(ledgerTimeoutMs, measured) : ledgerTimeoutMs;
  }

  /**
   * Before a call of the ledger: `true` when it must skip the ledger (down). Starts a probe when one
   * is due (`probe()` in the background, bounded by `limitMs`).
   */
  skip(user: LedgerUser, limitMs: number): boolean {
    const o = this.#outage;
    if (!o) return false;
    const now = this.#clock.now();
    if (o.probing || now < o.nextProbeMs) return true;
    o.probes++;
    this.#scheduleNextProbe(o, now);
    o.probing = true;
    let p: Promise<void>;
    try {
      p = this.ledger.probe();
    } catch (e) {
      p = Promise.reject(e);
    }
    pTimeout(p, { milliseconds: limitMs, customTimers: pTimeoutTimers(this.#clock) }).then(
      () => {
        o.probing = false;
        this.succeeded(user, true);
      },
      () => {
        o.probing = false;
      },
    );
    return true;
  }

  /**
   * A call of the ledger answered: the time-out count restarts; an outage ends (recovery warning)
   * when the answer is a probe's. Another call's answer does not end it: a ledger may resolve a call
   * without asking its store (a closed ledger's `leave` or `release` resolves quietly), and such an
   * answer proves nothing about the store.
   */
  succeeded(user?: LedgerUser, probed = false): void {
    this.#timeouts = 0;
    this.#failingSinceMs = undefined;
    this.#streakWarned = false;
    const o = this.#outage;
    if (!o) return;
    if (!probed) return;
    this.#outage = undefined;
    const log = (user ?? this.#lastUser)?.log;
    log?.warn({ ledger: this.ledger.kind, downMs: Math.round(this.#clock.now() - o.sinceMs), probes: o.probes }, `quota ledger (${this.ledger.kind}) is back after ${Math.round(this.#clock.now() - o.sinceMs)} ms`);
    const redo = this.#redo;
    this.#redo = [];
    for (const work of redo) {
      try {
        void work().catch(() => undefined);
      } catch {
        // expires by its lease
      }
    }
    this.#emitRecovered();
  }

  #emitRecovered(): void {
    callEach(this.#recovered);
  }

  /**
   * A call of the ledger failed: `timedOut` when it ran past its limit. A rejection marked
   * `ledgerDown`, or {@link TIMEOUTS_FOR_DOWN} time-outs in a row, begin an outage (one warning,
   * `stats.ledgerOutages` of every guard using the ledger).
   */
  failed(user: LedgerUser, error: unknown, timedOut: boolean): void {
    this.#failingSinceMs ??= this.#clock.now();
    if (this.#outage) return;
    if (timedOut) this.#timeouts++;
    else if (!isLedgerDown(error)) return;
    if (!isLedgerDown(error) && this.#timeouts < TIMEOUTS_FOR_DOWN) return;
    const now = this.#clock.now();
    const o: Outage = { sinceMs: now, nextProbeMs: now, nextIntervalMs: FIRST_PROBE_MS, probing: false, probes: 0 };
    this.#scheduleNextProbe(o, now);
    this.#outage = o;
    this.#timeouts = 0;
    for (const u of this.#users) u.stats.ledgerOutages++;
    if (!this.#users.has(user)) user.stats.ledgerOutages++;
    const detail = this.hadGoodReading
      ? '; meanwhile guarded creates of this process wait for it (up to maxWaitMs): other hosts may still admit on it'
      : "; it was never reached: creates go on with the in-process ledger and Nova's check only";
    const why = timedOut && !isLedgerDown(error) ? `${TIMEOUTS_FOR_DOWN} time-outs in a row` : ((error as Error)?.message ?? String(error));
    const level = this.#streakWarned ? 'info' : 'warn';
    user.log[level](
      { ledger: this.ledger.kind, err: (error as Error)?.message },
      `quota ledger (${this.ledger.kind}) is down: ${why}; skipping it and probing it from ${FIRST_PROBE_MS} ms to every ${MAX_PROBE_MS} ms${detail}`,
    );
  }

  #scheduleNextProbe(o: Outage, now: number): void {
    const interval = o.nextIntervalMs;
    o.nextProbeMs = now + Math.round(interval * (1 - Math.random() / 5));
    o.nextIntervalMs = Math.min(MAX_PROBE_MS, interval * 2);
  }
}

const wrappers = new WeakMap<QuotaLedger, ResilientLedger>();

/** The one {@link ResilientLedger} of `ledger` in this process (made on first use, on `clock`). */
export function resilientLedgerFor(ledger: QuotaLedger, clock: Clock): ResilientLedger {
  let r = wrappers.get(ledger);
  if (!r) {
    r = new ResilientLedger(ledger, clock);
    wrappers.set(ledger, r);
  }
  return r;
}
