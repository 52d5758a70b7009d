/**
 * Degraded mode, as one object over the guard's ledger: a {@link DegradedLedger} per guard, made
 * with the guard's state (`state.ts`) and living as long as the guard. It holds everything stateful
 * about a ledger that may fail, one part each: its health (up or down, time-outs in a row), the
 * probing of a ledger found down, the private in-process fallback, the redo queue of cleanup that
 * failed, the share rule (`degradedShare.ts`: the fleet as last seen, the servers this process
 * holds), and the moment from which no claim of this process can still be live in the store. Every
 * call the guard makes of its ledger goes through it ({@link DegradedLedger.bounded}: its time limit
 * is `max(ledgerTimeoutMs, ledger.callBudgetMs())`, and its outcome feeds the health and the moment;
 * cleanup in the background, {@link DegradedLedger.inBackground}); a guarded call's own side (the
 * ledger it is on, its place, its wake-ups) is its `CallLedger` (`callLedger.ts`). The guarded calls
 * ask it what an admission on the fallback is worth ({@link DegradedLedger.fallbackRule}); the
 * claims admitted in degraded mode are re-claimed on the ledger when it answers (`ledgerUse.ts`,
 * `reclaimDegraded`).
 *
 * Down: a rejection marked `ledgerDown` (`isLedgerDown`: refused connection, refused password), or
 * {@link TIMEOUTS_FOR_DOWN} time-outs in a row. While down, every admission skips the ledger at once
 * (0 ms of ledger time) and goes on with the fallback; the ledger is probed (`ledger.probe()`) at
 * most once per probe interval: 1 s after the
 * outage began, then doubling up to 5 s, each interval jittered down by up to a fifth. Probing is
 * lazy: it is triggered by guard activity. One warning when the outage begins (saying what creates
 * do from then, with the real wait: `degradedWords.ts`), one when a probe
 * finds it back ("is back after N ms"); the guard counts the outage in `stats.ledgerOutages`.
 *
 * The rule of an admission on the fallback ({@link DegradedLedger.fallbackRule}), for a call that a
 * ledger failure moved there (or that finds the ledger known down):
 * - `'alone'`: the ledger never answered this process (and does not say it reached its store, or
 *   the outage is older than {@link NEVER_REACHED_WAIT_MS}): nothing of this process is in the
 *   store; it works on its own as without a ledger, with Nova's check.
 * - `'wait'`: the ledger has answered this process, and claims of it may still be live in the store
 *   (other hosts may still subtract them and admit on it): the admission waits, as when short. An
 *   outage of a few seconds (a restart, a cut) costs time, never quota.
 * - `'share'`: the ledger has answered this process, and has been out of reach long enough that no
 *   claim of it can still be live there ({@link DegradedLedger.claimsGoneAtMs}): the process admits
 *   within its part of the quota (`degradedShare.ts`), on fresh `/limits` readings, one warning per
 *   outage and `stats.degradedAdmissions` for each admission. Waiting longer would only cost jobs.
 *
 * Why one per guard and not one per ledger object: what owns the decorator must live as long as
 * it and must not be module state. The guard does (it is made and dropped with it); a ledger object
 * shared by several guards of one process gives each guard its own health and fallback (each probes
 * and warns; the share rule counts each guard as the process, so one guard per process and ledger
 * stays the intended use, as `QuotaGuard` says).
 *
 * @module
 */
import pTimeout, { TimeoutError } from 'p-timeout';
import { pTimeoutTimers, type Clock } from '../core/clock.js';
import { throwIfAborted, type LedgerConfigError } from '../errors/index.js';
import { ledgerConfigErrorOf } from '../ledgers/index.js';
import type { Logger } from '../core/logger.js';
import { callEach } from '../core/listeners.js';
import type { AbsoluteLimits, ResourceAmounts } from '../core/types.js';
import { AMOUNT_FIELD, InProcessQuotaLedger, QUOTA_RESOURCES, isLedgerDown, type FitVerdict, type FreedCredit, type Headroom, type QuotaLedger } from '../ledger/index.js';
import { ShareRule, shareVerdict, type Fleet, type ShareVerdict } from './degradedShare.js';
import { causeText, fallbackWords, outageWords, type DegradedMoment } from './degradedWords.js';
import type { QuotaGuardStats } from './options.js';

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

/** What an admission on the fallback is worth: see the module description. */
export type FallbackRule = 'alone' | 'wait' | 'share';

/** The guard a {@link DegradedLedger} serves: where it counts and logs, its time limit of a ledger call, and the longest lease its claims ask for. */
export interface DegradedUser {
  readonly stats: QuotaGuardStats;
  readonly log: Logger;
  /** The guard's `ledgerTimeoutMs`. */
  readonly ledgerTimeoutMs: number;
  /** The longest lease, in ms, a call of the guard may write on the ledger (`postLeaseMs`). */
  readonly longestLeaseMs: () => number;
  /** The guard's `ledgerFallback`: what a ledger that cannot work for a reason of its setup does ({@link DegradedLedger.softStart}). */
  readonly ledgerFallback: 'throw' | 'in-process';
  /** The guard's warning of a fallback, once per cause (`onWarning`, or once per process: `process.emitWarning`). */
  readonly warn: (cause: string, message: string) => void;
  /** Where the ledger came from, as a warning names it for a host name to check (`degradedWords.ts`). */
  readonly ledgerSource: string;
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

/** The health of the ledger and its probing (see the module description). */
class LedgerHealth {
  timeouts = 0;
  outage: Outage | undefined;
  /** A failure of the current streak (since the last answer) was already logged as a warning. */
  streakWarned = false;

  /** Begin an outage now. */
  begin(now: number): Outage {
    const o: Outage = { sinceMs: now, nextProbeMs: now, nextIntervalMs: FIRST_PROBE_MS, probing: false, probes: 0 };
    this.scheduleNextProbe(o, now);
    this.outage = o;
    this.timeouts = 0;
    return o;
  }

  scheduleNextProbe(o: Outage, now: number): void {
    const interval = o.nextIntervalMs;
    o.nextProbeMs = now + Math.round(interval * (1 - Math.random() / 5));
    o.nextIntervalMs = Math.min(MAX_PROBE_MS, interval * 2);
  }
}

/** Cleanup that failed on the ledger, sent again when an outage ends (at most {@link MAX_REDO}; the oldest dropped). */
class RedoQueue {
  #work: Array<() => Promise<void>> = [];

  push(work: () => Promise<void>): void {
    this.#work.push(work);
    if (this.#work.length > MAX_REDO) this.#work.shift();
  }

  /** Send every kept cleanup again (in the background; what fails expires by its lease). */
  flush(): void {
    const redo = this.#work;
    this.#work = [];
    for (const work of redo) {
      try {
        void work().catch(() => undefined);
      } catch {
        // expires by its lease
      }
    }
  }
}

/** See the module description. */
export class DegradedLedger {
  /** The user's ledger. */
  readonly ledger: QuotaLedger;
  /** The private in-process ledger the calls go on with while `ledger` fails (same holder). */
  readonly fallback: InProcessQuotaLedger;
  /** The share rule's memory: the fleet as last seen, the servers this process holds. */
  readonly share: ShareRule;
  readonly #clock: Clock;
  readonly #user: DegradedUser;
  readonly #health = new LedgerHealth();
  readonly #redo = new RedoQueue();
  readonly #recovered = new Set<() => void>();
  #hadGoodReading = false;
  /** Ledger calls sent in the background that {@link close} waits for (`publishFreed`). */
  readonly #pending = new Set<Promise<unknown>>();
  /** Aborted by {@link close}: ends the time limit of a probe in flight (its timer would hold the process up to the budget). */
  readonly #closing = new AbortController();
  /** A failure of the ledger was logged as a warning (the next ones at debug level). */
  #fallbackWarned = false;
  /** When the last call that may have reached the store was sent, on the clock (ms). */
  #landedMs: number | undefined;
  /** When the ledger was first found failing since its last answer, on the clock (ms): the outage as this process saw it begin. */
  #failingSinceMs: number | undefined;
  /** The degraded-mode warning of the current outage was logged. */
  #shareWarned = false;
  /** The setup error of a ledger the guard went on without (`ledgerFallback: 'in-process'`): for the guard's life. */
  #softStart: LedgerConfigError | undefined;
  /** The ledger's last failure: its message and setup hint are named by the fallback's warning (`degradedWords.ts`). */
  #lastError: unknown;

  constructor(ledger: QuotaLedger, clock: Clock, user: DegradedUser) {
    this.ledger = ledger;
    this.#clock = clock;
    this.#user = user;
    this.fallback = new InProcessQuotaLedger({ clock, holder: ledger.holder });
    this.share = new ShareRule(ledger);
  }

  /**
   * True once the ledger has answered an admission of this process (admitted or short: a good
   * reading of it), or says it has reached its store (`QuotaLedger.everReached`).
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
   * How much longer, in ms, a process with no good reading of the ledger (whose ledger never reached
   * its store) waits for it: {@link NEVER_REACHED_WAIT_MS} from its calls' first failure (an outage,
   * or failures that do not make one), all of it before one. An admission's wait for the ledger ends
   * by then (`admission.ts`): the number the warnings print is the wait.
   */
  neverReachedWaitLeftMs(): number {
    const since = this.#failingSinceMs ?? this.#health.outage?.sinceMs;
    return since === undefined ? NEVER_REACHED_WAIT_MS : Math.max(0, since + NEVER_REACHED_WAIT_MS - this.#clock.now());
  }

  /** What the warnings of this moment depend on (`degradedWords.ts`). */
  #moment(kind: string = this.ledger.kind): DegradedMoment {
    const reached = this.hadGoodReading;
    return { kind, reached, waitLeftMs: reached ? 0 : this.neverReachedWaitLeftMs(), source: this.#user.ledgerSource };
  }

  /** The ledger answered an admission of this process. The first time, the recovery listeners run ({@link onRecovered}). */
  noteGoodReading(): void {
    if (this.#hadGoodReading) return;
    this.#hadGoodReading = true;
    callEach(this.#recovered);
  }

  /** Listen for the end of an outage (and the first admission on the ledger); returns the unsubscribe function. */
  onRecovered(listener: () => void): () => void {
    this.#recovered.add(listener);
    return () => this.#recovered.delete(listener);
  }

  /**
   * The {@link LedgerConfigError} a failure of the ledger stands for (`ledgerConfigErrorOf`: a
   * missing module, a SQLite path that cannot be used, Redis refusing the credentials), while no
   * admission of this guard has been answered by the ledger (nothing of this process can be in its
   * store yet: there is nothing for degraded mode to protect); `undefined` otherwise: an outage.
   */
  configError(error: unknown): LedgerConfigError | undefined {
    if (this.#hadGoodReading) return undefined;
    return ledgerConfigErrorOf(error, this.ledger.kind);
  }

  /** True once the guard went on without a ledger that cannot work (`ledgerFallback: 'in-process'`). */
  get softStarted(): boolean {
    return this.#softStart !== undefined;
  }

  /**
   * The ledger cannot work (`error`, from {@link configError}). With `ledgerFallback: 'throw'` (the
   * default): throws `error`. With `'in-process'`: the guard goes on with its private in-process
   * ledger from now on (every admission `'alone'`, no probe; Nova's quota check decides the rest),
   * counts the call in `stats.ledgerFallbacks`, and warns once (the logger; `onWarning` or
   * `process.emitWarning`, once per process and cause).
   * @throws `error` unless `ledgerFallback` is `'in-process'`.
   */
  softStart(error: LedgerConfigError): void {
    if (this.#user.ledgerFallback !== 'in-process') throw error;
    this.#user.stats.ledgerFallbacks++;
    if (this.#softStart !== undefined) return;
    this.#softStart = error;
    const message = `quota ledger (${this.ledger.kind}): ${error.message}. ledgerFallback 'in-process': this process goes on with its own in-process ledger (other processes do not see its claims; Nova's quota check decides the rest)`;
    this.#user.log.warn({ ledger: this.ledger.kind, reason: error.reason }, message);
    this.#user.warn(`soft-start:${this.ledger.kind}:${error.reason}`, message);
  }

  /**
   * A guarded call skips the ledger (known down, or {@link softStarted}) and goes on with the
   * fallback: counted in `stats.ledgerFallbacks`, and the fallback's warning once per cause.
   */
  noteSkipped(): void {
    this.#user.stats.ledgerFallbacks++;
    if (this.#softStart !== undefined) return;
    this.#user.warn(`fallback:${this.ledger.kind}`, this.#fallbackMessage(this.ledger.kind));
  }

  /**
   * What a call that goes on without the ledger does, in words (the warning), naming the cause: the
   * message of the ledger's last failure (the ledger's own words, redacted by it), or `cause`.
   */
  #fallbackMessage(kind: string, cause?: unknown): string {
    if (cause !== undefined) this.#lastError = cause;
    return fallbackWords(this.#moment(kind), this.#lastError === undefined ? undefined : causeText(this.#lastError), this.#lastError);
  }

  /** True while the ledger is down (skipped). */
  get down(): boolean {
    return this.#health.outage !== undefined;
  }

  /** The time limit of one call of the ledger, in ms: `max(ledgerTimeoutMs, ledger.callBudgetMs())` (the ledger's measured round trips). */
  budgetMs(): number {
    const ledgerTimeoutMs = this.#user.ledgerTimeoutMs;
    let measured: number | undefined;
    try {
      measured = this.ledger.callBudgetMs();
    } catch {
      measured = undefined;
    }
    return typeof measured === 'number' && Number.isFinite(measured) ? Math.max(ledgerTimeoutMs, measured) : ledgerTimeoutMs;
  }

  /**
   * When no claim or place of this process can still be live in the store, and the ledger has been
   * out of reach that long, on the clock (ms): the later of the last call that may have reached it
   * (answered, or failed otherwise than `ledgerDown`: a call refused before it reached the store
   * wrote nothing) and the first failure since its last answer (an idle process, whose claims are
   * long gone, still waits out a short outage: the other hosts may be back on the ledger), plus the
   * longest lease a call of the guard asks for (`leaseTtlMs`, or the lease that covers a POST in
   * flight when longer: `postLeaseMs`), plus the store's lease of places and live holders
   * (`QuotaLedger.placeTtlMs`). `undefined` while neither is known.
   */
  claimsGoneAtMs(): number | undefined {
    const from = Math.max(this.#landedMs ?? -Infinity, this.#failingSinceMs ?? -Infinity);
    if (!Number.isFinite(from)) return undefined;
    const place = Number(this.ledger.placeTtlMs);
    return from + this.#user.longestLeaseMs() + (Number.isFinite(place) && place > 0 ? place : 0);
  }

  /** The fleet the share rule divides the quota among: as the ledger last saw it, or this process alone when it never said. */
  #fleet(): Fleet {
    return this.share.fleet ?? { hosts: 1, processesOnHost: 1 };
  }

  /**
   * What an admission on the fallback is worth now (see the module description). `fallbackForOutage`:
   * the call is on the fallback because a ledger call failed (a call that stays on the fallback after
   * losing its leases past `maxWaitMs` admits there, unless the ledger is known down).
   */
  fallbackRule(fallbackForOutage: boolean): FallbackRule {
    if (this.#softStart !== undefined) return 'alone';
    if (!fallbackForOutage && !this.down) return 'alone';
    if (!this.hadGoodReading) return this.neverReachedWaitLeftMs() > 0 ? 'wait' : 'alone';
    // The ledger answered since (a probe, while this admission was on the fallback): back to it next.
    if (this.#failingSinceMs === undefined) return 'wait';
    const goneAt = this.claimsGoneAtMs();
    if (goneAt === undefined || this.#clock.now() < goneAt) return 'wait';
    return 'share';
  }

  /**
   * The share rule for one admission in degraded mode (`degradedShare.ts`): `absolute` of a fresh
   * reading, this process's claims Nova may not count yet (`inFlight`) and its claims without a
   * server yet (`unbound`).
   */
  shareVerdict(absolute: AbsoluteLimits, needs: ResourceAmounts, inFlight: ResourceAmounts, unbound: readonly ResourceAmounts[]): ShareVerdict {
    const { held, nothing } = this.share.held(unbound);
    return shareVerdict(absolute, this.#fleet(), needs, inFlight, held, nothing);
  }

  /**
   * The verdict of an admission that waits for the ledger (`'wait'`; the fallback's claim is already
   * given back): `'short'`, with headroom 0 for what the call needs.
   */
  outOfReachFit(needs: ResourceAmounts, headroom: Headroom): FitVerdict {
    const wanted = QUOTA_RESOURCES.filter((r) => needs[AMOUNT_FIELD[r]] > 0);
    const shortfalls = (wanted.length > 0 ? wanted : QUOTA_RESOURCES).map((resource) => ({ resource, needed: needs[AMOUNT_FIELD[resource]], ...headroom[resource], headroom: 0 }));
    this.#user.log.debug(
      { needs, ledger: this.ledger.kind },
      this.hadGoodReading
        ? 'quota ledger out of reach: waiting for it (it has answered this process before: other hosts may still admit on it)'
        : 'quota ledger out of reach: waiting for it (never answered this process yet: it may be back soon, e.g. a Redis restarting)',
    );
    return { verdict: 'short', shortfalls };
  }

  /** An admission in degraded mode: counted, and the one warning of the outage. */
  noteShareAdmission(): void {
    this.#user.stats.degradedAdmissions++;
    if (this.#shareWarned) return;
    this.#shareWarned = true;
    const fleet = this.#fleet();
    const seen = this.share.fleet === undefined ? '; the ledger never said who else uses it: this process counts alone' : '';
    const since = this.#health.outage?.sinceMs;
    this.#user.log.warn(
      { ledger: this.ledger.kind, hosts: fleet.hosts, processesOnHost: fleet.processesOnHost, downMs: since === undefined ? undefined : Math.round(this.#clock.now() - since) },
      `quota ledger (${this.ledger.kind}) out of reach longer than any claim of this process can live in it: admitting within this process's part of the quota (1/${fleet.hosts} of it per host, shared by ${fleet.processesOnHost} process(es) of this host${seen}) on fresh /limits readings until it answers; Nova's quota check decides the rest`,
    );
  }

  /**
   * `work()` (a call of the guard's ledger) bounded on the clock by `limitMs` (default the budget,
   * {@link budgetMs}) and by `signal`; a synchronous throw becomes a rejection. The outcome feeds the
   * health (a time-out counts toward "down" only when the limit was the whole budget, not a
   * `maxWaitMs` cut) and the moment ({@link claimsGoneAtMs}).
   * @throws `AbortError` when `signal` aborts first (the ledger call is abandoned, not undone).
   */
  async bounded<T>(what: string, work: () => Promise<T>, signal?: AbortSignal, limitMs: number = this.budgetMs()): Promise<T> {
    throwIfAborted(signal);
    const sentAtMs = this.#clock.now();
    let p: Promise<T>;
    try {
      p = work();
    } catch (e) {
      p = Promise.reject(e);
    }
    let value: T;
    try {
      value = await pTimeout(p, { milliseconds: limitMs, signal, customTimers: pTimeoutTimers(this.#clock), message: `ledger ${what} took longer than ${limitMs} ms` });
    } catch (e) {
      if (signal?.aborted) this.mayHaveLanded(sentAtMs);
      throwIfAborted(signal);
      this.failed(e, e instanceof TimeoutError && limitMs >= this.budgetMs(), sentAtMs);
      throw e;
    }
    this.succeeded(sentAtMs);
    return value;
  }

  /**
   * `work()` on `ledger`: {@link bounded} for the guard's ledger; run as it is on the fallback
   * (in-process, never hangs). A synchronous throw becomes a rejection either way.
   */
  boundedOn<T>(ledger: QuotaLedger, what: string, work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (ledger !== this.fallback) return this.bounded(what, work, signal);
    try {
      return work();
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Cleanup on a ledger (`leave`, `release`, `bind`) that must not hold up the guarded call: run now,
   * in the background, bounded by the budget and never by a caller's signal (an aborted call still
   * leaves and releases). A failure goes to `onError` and is sent again when an outage ends (the redo
   * queue); what is not undone expires by its lease. Never sends a Nova request.
   */
  inBackground(ledger: QuotaLedger, what: string, work: () => Promise<void>, onError: (e: unknown) => void = () => undefined): void {
    this.boundedOn(ledger, what, work).catch((e: unknown) => {
      if (ledger !== this.fallback) this.#redo.push(() => this.bounded(what, work));
      onError(e);
    });
  }

  /**
   * Note a failed call of `ledger` after which a guarded call goes on with the fallback: one warning
   * (then debug lines), `stats.ledgerFallbacks`, and the process warning of the fallback (once per
   * cause). `cut`: the call ran out of what was left of its guarded call's `maxWaitMs`, not of the
   * ledger's budget (debug level, no warning: the caller's deadline, not a failing ledger).
   */
  noteFallback(ledger: QuotaLedger, what: string, e: unknown, cut = false): void {
    const log = this.#user.log;
    this.#user.stats.ledgerFallbacks++;
    const fields = { ledger: ledger.kind, call: what, err: (e as Error)?.message };
    if (cut) {
      log.debug(fields, `quota ledger (${ledger.kind}) call cut short by the guarded call's maxWaitMs: going on with the in-process ledger`);
      return;
    }
    this.#user.warn(`fallback:${ledger.kind}`, this.#fallbackMessage(ledger.kind, e));
    // A ledger known down has had its one outage warning.
    if (this.down) {
      log.debug(fields, `quota ledger (${ledger.kind}) failed: going on with the in-process ledger`);
      return;
    }
    const msg = this.#fallbackMessage(ledger.kind);
    if (this.#fallbackWarned) {
      log.debug(fields, msg);
      return;
    }
    this.#fallbackWarned = true;
    this.#health.streakWarned = true;
    log.warn(fields, msg);
  }

  /**
   * Tell the ledger (and the fallback) that Nova confirmed a deletion: in the background, bounded,
   * and awaited by {@link close}. A failure is logged at debug level (the other holders see the freed
   * quota at their next read). The server is no longer this process's (the share rule).
   */
  publishFreed(serverId: string, credit?: FreedCredit): void {
    this.share.freed(serverId);
    void this.fallback.publishFreed(serverId);
    if (this.ledger === this.fallback) return;
    const p = this.bounded('publishFreed', () => this.ledger.publishFreed(serverId, credit)).catch((e: unknown) => {
      // harmless (the others read Nova's usage anyway) and expected during an outage: debug level
      this.#user.log.debug(
        { ledger: this.ledger.kind, serverId, err: (e as Error)?.message },
        `quota ledger (${this.ledger.kind}) could not publish a confirmed deletion: other holders see the freed quota at their next read`,
      );
    });
    this.#pending.add(p);
    void p.finally(() => this.#pending.delete(p));
  }

  /** Listen for freed quota on the ledger and the fallback; returns the unsubscribe function. */
  onFreed(listener: () => void): () => void {
    const offs: Array<() => void> = [this.fallback.onFreed(listener)];
    if (this.ledger !== this.fallback) {
      try {
        offs.push(this.ledger.onFreed(listener));
      } catch (e) {
        this.noteFallback(this.ledger, 'onFreed', e);
      }
    }
    return () => {
      for (const off of offs) off();
    };
  }

  /** At the guard's `close()`: stop waiting for a probe in flight, and wait for the background calls ({@link publishFreed}, each bounded). */
  async close(): Promise<void> {
    this.#closing.abort();
    await Promise.allSettled([...this.#pending]);
  }

  /**
   * Before a call of the ledger: `true` when it must skip the ledger (down). Starts a probe when one
   * is due (`probe()` in the background, bounded by `limitMs`).
   */
  skip(limitMs: number): boolean {
    if (this.#softStart !== undefined) return true;
    const o = this.#health.outage;
    if (!o) return false;
    const now = this.#clock.now();
    if (o.probing || now < o.nextProbeMs) return true;
    o.probes++;
    this.#health.scheduleNextProbe(o, now);
    o.probing = true;
    let p: Promise<void>;
    try {
      p = this.ledger.probe();
    } catch (e) {
      p = Promise.reject(e);
    }
    pTimeout(p, { milliseconds: limitMs, signal: this.#closing.signal, customTimers: pTimeoutTimers(this.#clock) }).then(
      () => {
        o.probing = false;
        this.succeeded(undefined, true);
      },
      () => {
        o.probing = false;
      },
    );
    return true;
  }

  /**
   * A call of the ledger sent at `sentAtMs` answered (a probe's answer: `probed`, no `sentAtMs`): the
   * time-out count restarts; an outage ends (recovery warning, redo queue sent, recovery listeners)
   * when the answer is a probe's. Another call's answer does not end it: a ledger may resolve a call
   * without asking its store (a closed ledger's `leave` or `release` resolves quietly), and such an
   * answer proves nothing about the store.
   */
  succeeded(sentAtMs?: number, probed = false): void {
    if (sentAtMs !== undefined) this.#landed(sentAtMs);
    const h = this.#health;
    h.timeouts = 0;
    h.streakWarned = false;
    const o = h.outage;
    if (!o) {
      this.#failingSinceMs = undefined;
      return;
    }
    if (!probed) return;
    h.outage = undefined;
    this.#failingSinceMs = undefined;
    this.#shareWarned = false;
    const downMs = Math.round(this.#clock.now() - o.sinceMs);
    this.#user.log.warn({ ledger: this.ledger.kind, downMs, probes: o.probes }, `quota ledger (${this.ledger.kind}) is back after ${downMs} ms`);
    this.#redo.flush();
    callEach(this.#recovered);
  }

  /**
   * A call of the ledger sent at `sentAtMs` failed: `timedOut` when it ran past its limit. A
   * rejection marked `ledgerDown`, or {@link TIMEOUTS_FOR_DOWN} time-outs in a row, begin an outage.
   */
  failed(error: unknown, timedOut: boolean, sentAtMs?: number): void {
    // Not refused before reaching the store: it may have written there (a claim, a renewal).
    if (sentAtMs !== undefined && !isLedgerDown(error)) this.#landed(sentAtMs);
    this.#failingSinceMs ??= this.#clock.now();
    this.#lastError = error;
    const h = this.#health;
    if (h.outage) return;
    if (timedOut) h.timeouts++;
    else if (!isLedgerDown(error)) return;
    if (!isLedgerDown(error) && h.timeouts < TIMEOUTS_FOR_DOWN) return;
    h.begin(this.#clock.now());
    this.#shareWarned = false;
    this.#user.stats.ledgerOutages++;
    const why = timedOut && !isLedgerDown(error) ? `${TIMEOUTS_FOR_DOWN} time-outs in a row` : causeText(error);
    const level = h.streakWarned ? 'info' : 'warn';
    this.#user.log[level]({ ledger: this.ledger.kind, err: (error as Error)?.message }, outageWords(this.#moment(), why, error, { firstMs: FIRST_PROBE_MS, maxMs: MAX_PROBE_MS }));
  }

  /** A call sent at `sentAtMs` may have reached the store (its outcome is not known: the caller aborted). */
  mayHaveLanded(sentAtMs: number): void {
    this.#landed(sentAtMs);
  }

  #landed(sentAtMs: number): void {
    if (this.#landedMs === undefined || sentAtMs > this.#landedMs) this.#landedMs = sentAtMs;
  }
}
