/**
 * The ledger one guarded call is on: the guard's {@link QuotaLedger}, with the private in-process
  * fallback of its degraded mode (`degradedLedger.ts`) behind it. Every step of the ledger protocol a
 * guarded call takes goes through its {@link CallLedger}: the admission (`acquire`: the reading, the
 * check and claim, a place when short), the guard's `headroom()` (`peek`), `claimAnyway`. Each step is bounded in time
 * (`DegradedLedger.budgetMs`, or less while the call's `maxWaitMs` is closer); when
 * the guard's ledger fails, or the wrapper knows it down, the call moves to the fallback and the
 * step runs there, so the admission code (`admission.ts`) never branches on which ledger it is
 * on. A call moved for an outage goes back to the guard's ledger at its next admission once the
 * ledger is not known down ({@link CallLedger.startAdmission}). What an admission on the fallback
 * is worth is degraded mode's rule (`DegradedLedger.fallbackRule`), applied here: while the call
 * waits for the ledger, or its process's share of the quota (`degradedShare.ts`) refuses it, the
 * fallback's claim is given back and the admission is "out of reach"; otherwise the claim is held as
 * degraded, re-claimed on the ledger when it answers. An answer of the guard's ledger to an
 * admission is a good reading (`DegradedLedger.noteGoodReading`).
 *
 * It also holds the call's place in the queue and listens for the wake-ups the ledger addresses
 * to it (`wakeUps.ts`): a place is left when the call moves to another ledger or ends its wait.
 *
 * @module
 */
import pTimeout, { TimeoutError } from 'p-timeout';
import type { Clock } from '../core/clock.js';
import { MAX_TIMER_MS } from '../core/validate.js';
import type { AbsoluteLimits, ResourceAmounts } from '../core/types.js';
import { AbortError, NovaNetworkError, throwIfAborted } from '../errors/index.js';
import { NO_NEEDS, addNeeds, type Acquisition, type LedgerPeek, type LedgerPlace, type QuotaLedger, type Shortfall, type UncountedRead } from '../ledger/index.js';
import { holdClaim, holdDegraded } from './ledgerUse.js';
import type { Claim, GuardState } from './state.js';

/** A read of `GET /limits` as the ledger calls it. */
export type LimitsRead = (signal: AbortSignal | undefined) => Promise<{ absolute: AbsoluteLimits; requestId: string | undefined }>;

/** A place in a ledger's queue, with the ledger that gave it. */
export interface HeldPlace {
  readonly ledger: QuotaLedger;
  readonly place: LedgerPlace;
}

/** See the module description. One per guarded call (and one, with no deadline, per `headroom()` read). */
export class CallLedger {
  readonly #g: GuardState;
  /** The call's `maxWaitMs` deadline on the guard's clock (ms): `Infinity` without a call. */
  readonly #deadlineMs: number;
  #current: QuotaLedger;
  #fallbackForOutage = false;
  #place: HeldPlace | undefined;
  #offWake: (() => void) | undefined;
  #wake: (() => void) | undefined;
  #wakes = 0;
  #waitedForLedger = false;
  #shareShort = false;

  constructor(g: GuardState, deadlineMs: number = Number.POSITIVE_INFINITY) {
    this.#g = g;
    this.#deadlineMs = deadlineMs;
    this.#current = g.ledger;
  }

  /** The ledger the call's next step runs on: the guard's, or its fallback once the guard's failed during the call. */
  get current(): QuotaLedger {
    return this.#current;
  }

  /** True while the call is on the fallback ledger. */
  get onFallback(): boolean {
    return this.#current === this.#g.fallback;
  }

  /** True when the call moved to the fallback because a ledger call failed: it goes back at its next admission once the ledger is not known down. */
  get fallbackForOutage(): boolean {
    return this.#fallbackForOutage;
  }

  /** True when the call's last admission waited for a ledger out of reach (`degradedLedger.ts`): the `QuotaWaitTimeoutError` at `maxWaitMs` says so. */
  get waitedForLedger(): boolean {
    return this.#waitedForLedger;
  }

  /** True when that wait was the share's: past the moment, the process's share of the quota (or the reading) left too little (`degradedShare.ts`). */
  get shareShort(): boolean {
    return this.#shareShort;
  }

  /** Wake-ups addressed to the call's place so far. */
  get wakes(): number {
    return this.#wakes;
  }

  /** True while the call listens for the wake-ups of its place (`onWake`: it holds a place, and its ledger took the listener). */
  get addressed(): boolean {
    return this.#offWake !== undefined;
  }

  /**
   * The time limit of one ledger step of the call, in ms: the budget (`DegradedLedger.budgetMs`), or
   * less while the call's `maxWaitMs` is running and closer (a hung ledger never stretches the
   * wait past `maxWaitMs`). Once `maxWaitMs` is spent (or without a call): the budget.
   */
  limitMs(): number {
    const budget = this.#g.res.budgetMs();
    const remaining = this.#deadlineMs - this.#g.clock.now();
    return remaining > 0 ? Math.min(budget, Math.ceil(remaining)) : budget;
  }

  /**
   * True when the guard's ledger is down and this call must skip it (the wrapper's verdict, which may
   * start a probe): the call moves to the fallback at once, with no wait, and counts as a fallback.
   */
  #skipDown(): boolean {
    const g = this.#g;
    if (!g.res.skip(g.res.budgetMs())) return false;
    g.res.noteSkipped();
    g.log.debug({ ledger: g.ledger.kind }, 'quota ledger is down: going on with the in-process ledger');
    this.moveToFallback();
    return true;
  }

  /**
   * A failure of the guard's ledger that says it cannot work for a reason of its setup
   * (`DegradedLedger.configError`): the `LedgerConfigError` is thrown to the caller (the default,
   * `ledgerFallback: 'throw'`), or the guard goes on without the ledger for good (`'in-process'`):
   * true, and the call is on the fallback. False for an outage (degraded mode).
   * @throws `LedgerConfigError` unless `ledgerFallback` is `'in-process'`.
   */
  #setupFailed(error: unknown): boolean {
    const config = this.#g.res.configError(error);
    if (config === undefined) return false;
    // A ledger the guard opened from a string is closed: nothing of it keeps running (the next call
    // opens it again, unless the guard goes on without it).
    this.#g.opts.ownedLedger?.drop();
    this.#g.res.softStart(config);
    this.moveToFallback(false);
    return true;
  }

  /**
   * The call goes on with the fallback ledger (leaving its place on the other, best effort).
   * `returns`: the call goes back to the ledger at its next admission once the ledger is not known
   * down (a move for a failed ledger call); `false` for a call that lost its leases past `maxWaitMs`,
   * which stays on the fallback (no admission loop without a wait).
   */
  moveToFallback(returns = true): void {
    const g = this.#g;
    this.#current = g.fallback;
    this.#fallbackForOutage = returns;
    const place = this.#dropPlace();
    if (place && place.ledger !== g.fallback) g.res.inBackground(place.ledger, 'leave', () => place.ledger.leave(place.place));
  }

  /**
   * At the start of an admission: a call moved to the fallback by an outage goes back to the
   * guard's ledger once it is up (asking the wrapper also probes a ledger that is down, when a
   * probe is due), leaving its place on the fallback.
   */
  startAdmission(): void {
    const g = this.#g;
    this.#waitedForLedger = false;
    this.#shareShort = false;
    if (!(this.onFallback && this.#fallbackForOutage) || g.res.skip(g.res.budgetMs())) return;
    this.#current = g.ledger;
    this.#fallbackForOutage = false;
    if (this.#place?.ledger === g.fallback) this.leave();
  }

  /**
   * Run `op` on the call's ledger, bounded; when it fails, the call moves to the fallback ledger
   * (leaving its place on the other, best effort) and `op` runs there. `undo` gives back what an
   * answer after the time limit (or the abort) took, in the background. Resolves the result and
   * the ledger that gave it.
   */
  async run<T>(what: string, op: (l: QuotaLedger) => Promise<T>, undo?: (l: QuotaLedger, late: T) => Promise<void>, signal?: AbortSignal): Promise<{ value: T; ledger: QuotaLedger }> {
    const g = this.#g;
    const ledger = this.#current;
    if (ledger === g.fallback) return { value: await op(ledger), ledger };
    if (this.#skipDown()) return { value: await op(g.fallback), ledger: g.fallback };
    let pending: Promise<T> | undefined;
    const limitMs = this.limitMs();
    try {
      return { value: await g.res.bounded(what, () => (pending = op(ledger)), signal, limitMs), ledger };
    } catch (e) {
      // A call that answers after its time limit (or after the abort): undo what it took (a claim, a place), best effort.
      if (undo && pending) pending.then((late) => g.res.inBackground(ledger, `undo ${what}`, () => undo(ledger, late))).catch(() => undefined);
      throwIfAborted(signal);
      if (this.#setupFailed(e)) return { value: await op(g.fallback), ledger: g.fallback };
      g.res.noteFallback(ledger, what, e, e instanceof TimeoutError && limitMs < g.res.budgetMs());
      this.moveToFallback();
      return { value: await op(g.fallback), ledger: g.fallback };
    }
  }

  /**
   * A reading and the claims an admission on it would subtract, claiming nothing (`peek`: the
   * guard's `headroom()`), through the call's ledger ({@link CallLedger.#through}), or through the
   * fallback ledger when the call's ledger is the fallback, is down or fails.
   */
  async peek(read: LimitsRead, signal: AbortSignal | undefined): Promise<LedgerPeek> {
    if (!this.onFallback) {
      const r = await this.#through('peek', (l, rd, s) => l.peek(rd, s), read, signal);
      if (r) return r.value;
    }
    return this.#g.fallback.peek(read, signal);
  }

  /**
   * One admission (`acquire`: the reading, the check and claim, and a place in the queue when
   * short) on the call's ledger; when that ledger is the fallback, is down or fails, on the
   * fallback, where degraded mode decides what it is worth (see the module description):
   * `outOfReach` when the call waits for the ledger (the fallback's claim given back). A late
   * answer of the ledger gives back its claim and place. A place the ledger gives is the call's
   * from then on; a claim it gives is held by the guard (`claim`). `uncounted`: see
   * `QuotaLedger.acquire`; `staleShortMs`: see `AcquireRequest.staleShortMs`; `refutedStamp`: see
   * `AcquireRequest.refutedStamp` (the claim notes the stamp of the reading it was admitted on, `Claim.readingStamp`).
   */
  async acquire(
    needs: ResourceAmounts,
    ttlMs: number,
    read: LimitsRead,
    signal: AbortSignal | undefined,
    uncounted?: UncountedRead,
    staleShortMs?: number,
    refutedStamp?: number,
  ): Promise<{ value: Acquisition; claim: Claim | undefined; outOfReach: boolean; shortfalls?: Shortfall[] | undefined }> {
    const g = this.#g;
    if (!this.onFallback) {
      const place = this.placeOn(this.#current);
      const sentAt = g.clock.now();
      const acquired = await this.#through(
        'acquire',
        (l, rd, s, u) => l.acquire({ place, needs, ttlMs, joinIfShort: true, ...(staleShortMs ? { staleShortMs } : {}), ...(refutedStamp !== undefined ? { refutedStamp } : {}) }, rd, s, u),
        read,
        signal,
        async (l, late) => {
          if (late.admitted) await l.release(late.claim, 'not-created');
          if (late.place && late.place !== place) await l.leave(late.place);
        },
        uncounted,
      );
      if (acquired) {
        const a = acquired.value;
        if (a.place && this.#place?.place !== a.place) this.#holdPlace({ ledger: acquired.ledger, place: a.place });
        g.res.noteGoodReading();
        const claim = a.admitted ? holdClaim(g, a.claim, acquired.ledger, sentAt) : undefined;
        if (claim) claim.readingStamp = a.reading.stamp;
        return { value: a, claim, outOfReach: false };
      }
    }
    const fallback = g.fallback;
    const sentAt = g.clock.now();
    const value = await fallback.acquire({ place: this.placeOn(fallback), needs, ttlMs, joinIfShort: true }, read, signal);
    if (value.place && this.#place?.place !== value.place) this.#holdPlace({ ledger: fallback, place: value.place });
    if (!value.admitted) return { value, claim: undefined, outOfReach: false };
    // On the fallback, degraded mode decides (`DegradedLedger.fallbackRule`): `outOfReach` when the
    // call waits for the ledger or its share refuses it (no claim; `shortfalls`: the share's).
    const rule = g.res.fallbackRule(this.#fallbackForOutage);
    if (rule !== 'alone') {
      const verdict = rule === 'share' ? this.#shareVerdict(value.reading.absolute, needs) : undefined;
      if (verdict === undefined || !verdict.admits) {
        await fallback.release(value.claim, 'not-created');
        this.#waitedForLedger = true;
        this.#shareShort = verdict !== undefined;
        return { value, claim: undefined, outOfReach: true, shortfalls: verdict?.admits === false ? verdict.shortfalls : undefined };
      }
      g.res.noteShareAdmission();
    }
    const claim = holdClaim(g, value.claim, fallback, sentAt);
    holdDegraded(g, claim);
    return { value, claim, outOfReach: false };
  }

  /** The share rule for `needs` against `absolute`, with this guard's claims (`DegradedLedger.shareVerdict`). */
  #shareVerdict(absolute: AbsoluteLimits, needs: ResourceAmounts): ReturnType<GuardState['res']['shareVerdict']> {
    const g = this.#g;
    let inFlight: ResourceAmounts = { ...NO_NEEDS };
    const unbound: ResourceAmounts[] = [];
    for (const c of g.claims) {
      if (c.ended) continue;
      inFlight = addNeeds(inFlight, c.needs);
      if (c.serverId === undefined) unbound.push(c.needs);
    }
    return g.res.shareVerdict(absolute, needs, inFlight, unbound);
  }

  /** The call's place on `ledger`, if it holds one there (what `admit` and `acquire` are told). */
  placeOn(ledger: QuotaLedger): LedgerPlace | undefined {
    return this.#place?.ledger === ledger ? this.#place.place : undefined;
  }

  /**
   * Leave the call's place, if it holds one: sent now, bounded, in the background (it never delays
   * the call; a place not left expires by the ledger's place lease).
   */
  leave(): void {
    const held = this.#dropPlace();
    if (held) this.#g.res.inBackground(held.ledger, 'leave', () => held.ledger.leave(held.place));
  }

  /** While the call sleeps: `wake` ends the sleep when a wake-up is addressed to its place. Returns the function that stops it. */
  wakeWith(wake: () => void): () => void {
    this.#wake = wake;
    return () => {
      if (this.#wake === wake) this.#wake = undefined;
    };
  }

  /** The call now holds `held`: listen for the wake-ups its ledger addresses to it. */
  #holdPlace(held: HeldPlace): void {
    this.#dropPlace();
    this.#place = held;
    try {
      this.#offWake = held.ledger.onWake(held.place, () => {
        this.#wakes++;
        this.#wake?.();
      });
    } catch (e) {
      // The call wakes on every confirmed deletion instead (onFreed).
      this.#g.log.debug({ ledger: held.ledger.kind, err: (e as Error)?.message }, 'quota ledger could not address wake-ups to a place: waking on every freed server');
    }
  }

  /** The call no longer holds its place: stop listening for it; returns the place (to leave). */
  #dropPlace(): HeldPlace | undefined {
    const held = this.#place;
    this.#place = undefined;
    this.#offWake?.();
    this.#offWake = undefined;
    return held;
  }

  /**
   * `run(ledger, read, signal)` on the call's ledger, where `run` may call `read` (a `GET /limits`).
   * The time limit ({@link CallLedger.limitMs}) counts the ledger's own work, not the time Nova
   * takes to answer `read`, nor its wait for another holder's read (`read.othersRead`, bounded as
   * the call's own read would be: by `maxWaitMs`, at least `finalReadMs`, then a `NovaNetworkError`
   * (`timedOut`) as for its own read unanswered at the deadline); an error of `read` itself (Nova's)
   * is thrown as it is, never taken for a ledger failure. `signal` aborting ends the wait at once.
   *
   * The `read` the ledger gets is gated: once this function has settled (the answer came, the
   * ledger was abandoned for the fallback, or the call aborted), a late `read` by the abandoned
   * ledger call is refused with an {@link AbortError} before any request: no `GET /limits` ever
   * reaches Nova for a call that has settled. `uncounted` (a listing of the servers Nova does not
   * count yet, for `acquire`) is gated and paused out of the limit the same way, and its errors are
   * thrown as Nova's too. A ledger that is down (the wrapper's verdict) or fails
   * resolves `undefined`: the call has moved to the fallback ledger. `undo` gives back what a late
   * answer took (a claim, a place), in the background.
   */
  async #through<T>(
    what: string,
    run: (ledger: QuotaLedger, read: LimitsRead, signal: AbortSignal | undefined, uncounted: UncountedRead | undefined) => Promise<T>,
    read: LimitsRead,
    signal: AbortSignal | undefined,
    undo?: (ledger: QuotaLedger, late: T) => Promise<void>,
    uncounted?: UncountedRead,
  ): Promise<{ value: T; ledger: QuotaLedger } | undefined> {
    const g = this.#g;
    const ledger = this.#current;
    throwIfAborted(signal);
    if (this.#skipDown()) return undefined;
    let readFailure: { error: unknown } | undefined;
    // `gate` refuses the ledger's late reads; `late` ends the wait (abort, or the ledger's own time limit).
    const gate = new AbortController();
    const late = new AbortController();
    const onAbort = (): void => late.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    let timer: ReturnType<Clock['setTimeout']> | undefined;
    // True while the running limit is the call's maxWaitMs, not the ledger's budget: a timeout then cuts the call short, it is no ledger failure.
    let cut = false;
    const arm = (): void => {
      g.clock.clearTimeout(timer);
      const ms = this.limitMs();
      cut = ms < g.res.budgetMs();
      timer = g.clock.setTimeout(() => late.abort(new TimeoutError(`ledger ${what} took longer than ${ms} ms`)), ms);
    };
    // A Nova request the ledger makes (`read`, `uncounted`): gated; Nova's time is not the ledger's:
    // the limit pauses while Nova answers, and starts again after.
    const timed =
      <R>(fn: (s: AbortSignal) => Promise<R>, request: string) =>
      async (s: AbortSignal | undefined): Promise<R> => {
        if (gate.signal.aborted) throw new AbortError(`the ledger call was abandoned: no ${request} for it`, { cause: gate.signal.reason });
        g.clock.clearTimeout(timer);
        try {
          return await fn(s === undefined ? gate.signal : AbortSignal.any([s, gate.signal]));
        } catch (e) {
          readFailure = { error: e };
          throw e;
        } finally {
          if (!gate.signal.aborted) arm();
        }
      };
    // The ledger waits for ANOTHER holder's Nova read (`waitForOthersRead`): Nova's time as well, so
    // the ledger's limit pauses. With a deadline (maxWaitMs), the wait is bounded as the call's own
    // read would be (`readLimitMs`): by the deadline, or `finalReadMs` after the wait began when it
    // began with less left; past that, the call ends as when its own read is unanswered at the
    // deadline (NovaNetworkError, timedOut): no read of its own at its deadline (a GET /limits more
    // per waiter for a Nova already slow), and no "ledger out of reach" for a ledger that answered.
    // Without a deadline (`headroom()`, `maxWaitMs: Infinity`): the longest a Nova read may take plus
    // the budget; a ledger that never ends its wait then fails as a ledger. The end is fixed at the
    // first wait of this ledger call (the ledgers wait in slices). Every limit is a finite timer delay
    // (a Node timer given Infinity or more than MAX_TIMER_MS fires after 1 ms).
    let othersEnd: number | undefined;
    const byDeadline = Number.isFinite(this.#deadlineMs);
    const othersRead = async <R>(wait: Promise<R>): Promise<R> => {
      if (gate.signal.aborted) return wait;
      g.clock.clearTimeout(timer);
      const now = g.clock.now();
      const readMs = g.client.requestTimeoutMs + g.res.budgetMs();
      othersEnd ??= byDeadline ? Math.max(this.#deadlineMs, now + Math.min(g.opts.finalReadMs, readMs)) : now + readMs;
      const ms = Math.min(MAX_TIMER_MS, Math.max(0, Math.ceil(othersEnd - now)));
      cut = false;
      timer = g.clock.setTimeout(() => {
        if (!byDeadline) {
          late.abort(new TimeoutError(`ledger ${what} waited ${ms} ms for another holder's GET /limits`));
          return;
        }
        const error = new NovaNetworkError({
          status: 0,
          code: 'ETIMEDOUT',
          timedOut: true,
          method: 'GET',
          url: '/limits',
          message: `GET /limits (another holder's read, which this call waited for through the ${ledger.kind} ledger) still unanswered at the guarded call's deadline (maxWaitMs ${g.opts.maxWaitMs} ms, finalReadMs ${g.opts.finalReadMs} ms)`,
        });
        readFailure = { error };
        late.abort(error);
      }, ms);
      try {
        return await wait;
      } finally {
        if (!gate.signal.aborted) arm();
      }
    };
    const timedRead = Object.assign(timed<{ absolute: AbsoluteLimits; requestId: string | undefined }>(read, 'GET /limits'), { othersRead });
    const timedUncounted = uncounted === undefined ? undefined : timed(uncounted, 'listing');
    arm();
    let p: Promise<T> | undefined;
    const sentAtMs = g.clock.now();
    try {
      try {
        p = run(ledger, timedRead, signal === undefined ? gate.signal : AbortSignal.any([signal, gate.signal]), timedUncounted);
      } catch (e) {
        p = Promise.reject(e);
      }
      // p-timeout without its own limit: the limit is `late`, paused while Nova answers.
      const value = await pTimeout(p, { milliseconds: Number.POSITIVE_INFINITY, signal: late.signal });
      g.res.succeeded(sentAtMs);
      return { value, ledger };
    } catch (e) {
      gate.abort(new Error('abandoned for the fallback ledger'));
      // Before any rethrow: a call abandoned for the abort or for Nova's error may still answer and
      // take a claim or a place, which would hold the headroom from every caller until its lease ends.
      if (undo && p) p.then((v) => g.res.inBackground(ledger, `undo ${what}`, () => undo(ledger, v))).catch(() => undefined);
      if (readFailure || signal?.aborted) g.res.mayHaveLanded(sentAtMs);
      if (readFailure) throw readFailure.error;
      throwIfAborted(signal);
      if (this.#setupFailed(e)) return undefined;
      g.res.failed(e, e instanceof TimeoutError && !cut, sentAtMs);
      g.res.noteFallback(ledger, what, e, e instanceof TimeoutError && cut);
      this.moveToFallback();
      return undefined;
    } finally {
      gate.abort(new Error('the guarded call is past this reading'));
      g.clock.clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }
}
