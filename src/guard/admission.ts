/**
 * The admission of one guarded call: the claim for each of its attempts. Its methods read as the
 * protocol ({@link Admission.claim}):
 *
 * 1. wait for headroom ({@link Admission}'s wait): at each admission, read `GET /limits` (Nova API
 *    reference, "Limits") through the call's ledger and admit in the same tick: check and claim
 *    (`src/ledger/port.ts`: `acquire`; the call's {@link CallLedger} runs it, on the fallback when
 *    the ledger fails); while short, report the wait (`acquire` queued the call at its first short
 *    answer; `leave` when the wait ends) and sleep;
 * 2. renew the claim's lease right before the POST (`leases.ts`: the fencing rule, a lost lease
 *    means no POST and back to 1 after a backoff step), then keep it renewed until the claim ends.
 *
 * The wait is one p-retry cannot express, so it is the guard's own, on the client's clock: it is
 * served first come, first served among the calls that share the ledger, and freed quota (a
 * deletion Nova confirmed, to this guard's client or, through the ledger, anyone's) ends it at once
 * for the call it may admit (below, wake-ups: the head of the queue, when the ledger addresses
 * wake-ups). Its delays follow the call's backoff ({@link backoffDelayMs}'s formula): a wait
 * doubles with every wait or retry of the call before it.
 *
 * **Wake-ups.** Who wakes when quota is freed, among the calls waiting for headroom.
 *
 * Every ledger addresses its wake-ups to places (`onWake`, `src/ledger/port.ts`): the head of the
 * fleet's queue when a deletion is confirmed anywhere, the next place when the head leaves (admitted,
 * or it gave up). The queue is first come, first served (an admission subtracts the needs of every place
 * ahead), so no call behind a head that does not fit can be admitted: waking the head alone loses
 * no admission, and a freed server starts one admission, plus one for each call it lets in, instead
 * of one for every waiting call of the fleet. A call listens for its place from the moment it holds
 * it until it leaves it (a wake-up that comes while it is reading `/limits` is counted and ends its
 * next sleep at once). A call that holds no place (its ledger did not queue it: an answer given up
 * while another holder refreshed, a store restarted moments ago) wakes on every confirmed deletion
 * (`onFreed`). Either way the call's backoff timer stays: a wake-up lost anyway (a ledger that
 * failed to deliver it) ends at the call's next backoff step. The call's place and the wake-ups
 * addressed to it are held by its `CallLedger` (`callLedger.ts`).
 *
 * @module
 */
import { throwIfAborted } from '../errors/index.js';
import { sleep } from '../core/clock.js';
import { traceHeadroomWait } from '../core/telemetry.js';
import type { ResourceAmounts } from '../core/types.js';
import { addNeeds, checkFit, computeHeadroom, describeShortfalls, shortfallResources, type FitVerdict, type Headroom, type Shortfall } from '../ledger/index.js';
import { holdClaim } from './ledgerUse.js';
import { keepLease, renewBeforePost } from './leases.js';
import { listUncounted, readLimits, refreshUnwatched, withinCallDeadline } from './limitsRead.js';
import { QuotaNeverFitsError, QuotaWaitTimeoutError } from './errors.js';
import { stepDelayMs } from './retryPolicy.js';
import { EXPLAIN_EVERY_WAITS, type QuotaWaitInfo, type QuotaWaitReason } from './options.js';
import { explainShortfall, serversForCheck, type ShortfallExplanation } from './explain.js';
import type { Admission as LedgerAdmission, LedgerLimits } from '../ledger/index.js';
import { isThenable, type Claim, type GuardState } from './state.js';
import type { GuardedCall } from './guardedCall.js';
import { askShortLooks } from '../delete/index.js';
import type { CallLedger } from './callLedger.js';
/** What one admission found: the headroom after the ledger's claims, and the claim, or why not (`head`: no place queued ahead; `queued`: it fits alone, not after the places ahead). */
interface Verdict {
  headroom: Headroom;
  fit?: FitVerdict;
  claim?: Claim;
  head?: boolean;
  queued?: boolean;
}

/** See the module description. One per guarded call, for `needs`. */
export class Admission {
  readonly #g: GuardState;
  readonly #call: GuardedCall;
  readonly #needs: ResourceAmounts;
  /** Waits for headroom so far (each doubles the next delay, as a retry does). */
  #waits = 0;
  /** `GET /limits` reads so far. */
  #limitsReads = 0;

  constructor(g: GuardState, call: GuardedCall, needs: ResourceAmounts) {
    this.#g = g;
    this.#call = call;
    this.#needs = needs;
  }

  /**
   * The claim for one attempt: `held` (kept from a refused POST) or a new one from the wait for
   * headroom; its lease renewed right before the POST (the fencing rule: a lost lease means no
   * POST, the call goes back to admission after its next backoff step), then kept renewed until the
   * claim ends. A renewal that fails moves the call to the fallback ledger; it goes back to the
   * ledger at its next admission, after a backoff step (while the ledger is out of reach, a process
   * it has answered before waits for it, then admits within its share: `degradedLedger.ts`). A call that keeps losing leases (or
   * failing renewals on a ledger that admits) past `maxWaitMs` stays on the fallback, so a ledger
   * that answers never blocks a create for good.
   * `fresh`: the claim did not come from `held` (the attempt counts).
   * @throws as the wait for headroom: {@link QuotaNeverFitsError} when `needs` is above a limit
   * itself (0 POSTs); {@link QuotaWaitTimeoutError} when `maxWaitMs` runs out while short, while
   * the ledger is out of reach for a process that has used it (`degradedLedger.ts`), or while the
   * ledger admits nothing although the reading fits (unless `onStaleLimits: 'attempt'`, which
   * claims anyway); {@link AbortError} (also when the guard closes); the client's errors.
   */
  async claim(held: Claim | undefined, signal: AbortSignal | undefined): Promise<{ claim: Claim; fresh: boolean }> {
    const g = this.#g;
    const call = this.#call;
    let kept = held;
    for (;;) {
      // QuotaGuard.close() ends a wait for headroom (AbortError): nothing of a closed guard keeps reading /limits.
      // Its own signal (`core/signalFanOut.ts`): every call's wait on `closing` adds no listener to it.
      const claim = kept ?? (await traceHeadroomWait(() => g.clock.now(), () => g.signals.run([signal, g.closing.signal], (waitSignal) => this.#waitForHeadroom(waitSignal))));
      if (await renewBeforePost(g, call.ledger, claim, signal)) {
        keepLease(g, claim);
        return { claim, fresh: claim !== held };
      }
      kept = undefined;
      // A failed renewal moved the call to the fallback; it goes back to the ledger at its next
      // admission, after a backoff step that doubles like a wait (a failing ledger gets fewer calls).
      if (call.ledger.onFallback && claim.ledger !== g.fallback) this.#waits++;
      const remaining = call.remainingMs();
      if (remaining <= 0) {
        call.ledger.moveToFallback(false);
        continue;
      }
      await sleep(g.clock, Math.min(stepDelayMs(call.firstDelayMs, this.#waits + call.retriesConsumed, g.opts.maxDelayMs), Math.ceil(remaining)), signal);
    }
  }

  /** Read, check and claim; wait while short. Resolves the claim. @throws as {@link Admission.claim}. */
  async #waitForHeadroom(signal: AbortSignal | undefined): Promise<Claim> {
    const g = this.#g;
    const call = this.#call;
    try {
      for (;;) {
        // A wake-up or a freed server while this admission reads and decides ends the next sleep at once.
        const wakesBefore = call.ledger.wakes;
        const freed = freedMeanwhile(g);
        let admitted: Verdict;
        try {
          admitted = await this.#admitOnce(signal);
        } finally {
          freed.off();
        }
        const { headroom, claim, fit } = admitted;
        const readAtMs = g.clock.now();
        this.#limitsReads++;
        if (claim) return claim;
        const shortfalls = fit!.shortfalls;
        if (fit!.verdict === 'never') {
          throw new QuotaNeverFitsError({ requestId: headroom.requestId, shortfalls, needs: this.#needs, headroom });
        }
        const remaining = call.remainingMs();
        if (call.deadlineReached || remaining <= 0) return await this.#atDeadline(headroom, shortfalls, readAtMs, signal);
        const delayMs = await this.#noteWait(headroom, shortfalls, admitted.queued === true, readAtMs, remaining, signal);
        // Woken meanwhile: a wake-up addressed to the call's place, or a freed server while it was
        // the head of the queue (its reading may be older than the freed server): read again at once.
        if (call.ledger.wakes !== wakesBefore || (freed.seen() && admitted.head === true)) throwIfAborted(signal);
        else await sleepUntilWoken(g, call.ledger, delayMs, signal);
      }
    } finally {
      // Leaving never delays the settle: sent now, bounded, in the background (a place not left
      // expires by the ledger's place lease).
      call.ledger.leave();
    }
  }

  /**
   * One admission: one `acquire` of the call's ledger (the reading, the check and claim atomically
   * after the claims in flight and the needs of the places queued ahead, and a place when short).
   */
  async #admitOnce(signal: AbortSignal | undefined): Promise<Verdict> {
    const g = this.#g;
    const ledger = this.#call.ledger;
    const needs = this.#needs;
    // Nova's reads end by the call's deadline (`limitsRead.ts`): a hung /limits never holds the call past it.
    const call = this.#call;
    await withinCallDeadline(g, call, 'GET /servers/{id}', (s) => refreshUnwatched(g, s), signal);
    ledger.startAdmission();
    const read = (s: AbortSignal | undefined): ReturnType<typeof readLimits> => withinCallDeadline(g, call, 'GET /limits', (rs) => readLimits(g, rs), s);
    const uncounted = (s: AbortSignal | undefined): ReturnType<typeof listUncounted> => withinCallDeadline(g, call, 'GET /servers/detail', (rs) => listUncounted(g.client, rs), s);
    const acquired = await ledger.acquire(needs, g.opts.leaseTtlMs, read, signal, uncounted, this.#staleShortMs(), call.refutedStamp);
    const { reading } = acquired.value;
    if (acquired.outOfReach) {
      const headroom = computeHeadroom(reading.absolute, acquired.value.inFlight, { requestId: reading.requestId, readAtMs: g.clock.wallNow() });
      return { headroom, fit: acquired.shortfalls ? { verdict: 'short', shortfalls: acquired.shortfalls } : g.res.outOfReachFit(needs, headroom) };
    }
    return this.#verdict(reading, acquired.value, acquired.claim);
  }

  /**
   * How old a kept reading may be for a "still short" answer to this admission
   * (`AcquireRequest.staleShortMs`): twice `maxDelayMs` on a waiting call's re-checks, so the calls
   * that wait read `/limits` afresh after a confirmed deletion, and otherwise once per two of their
   * longest backoff steps, not at every step of every call (quota freed outside the ledger is found
   * within `2 × maxDelayMs`, where a call's own step found it within `maxDelayMs`). Undefined (a
   * fresh reading) for the first admission, before a wait whose shortfall is explained (the check
   * compares the reading with a listing) and for the last admission before `maxWaitMs`.
   */
  #staleShortMs(): number | undefined {
    if (this.#waits === 0 || this.#call.deadlineReached) return undefined;
    if ((this.#waits + 1) % EXPLAIN_EVERY_WAITS === 0 && this.#explainsWaits()) return undefined;
    return 2 * this.#g.opts.maxDelayMs;
  }

  /** The headroom after the ledger's claims, and the claim held or why not. */
  #verdict(reading: LedgerLimits, admission: LedgerAdmission, claim: Claim | undefined): Verdict {
    const needs = this.#needs;
    const headroom = computeHeadroom(reading.absolute, admission.inFlight, { requestId: reading.requestId, readAtMs: this.#g.clock.wallNow() });
    if (claim) return { headroom, claim };
    const head = Object.values(admission.ahead).every((v) => !v);
    const fit = checkFit(needs, headroom);
    if (fit.verdict !== 'fits') return { headroom, fit, head };
    // Fits alone, not after the places queued ahead.
    return { headroom, fit: { verdict: 'short', shortfalls: checkFit(addNeeds(needs, admission.ahead), headroom).shortfalls }, head, queued: !head };
  }

  /**
   * `maxWaitMs` is spent and the call is still short: with `onStaleLimits: 'attempt'`, claim anyway
   * (Nova's own check decides); otherwise throw the {@link QuotaWaitTimeoutError}.
   */
  async #atDeadline(headroom: Headroom, shortfalls: Shortfall[], readAtMs: number, signal: AbortSignal | undefined): Promise<Claim> {
    const g = this.#g;
    const call = this.#call;
    const needs = this.#needs;
    if (g.opts.onStaleLimits === 'attempt') {
      g.log.warn(
        { shortfalls: describeShortfalls(shortfalls), elapsedMs: call.elapsedMs() },
        'maxWaitMs spent and /limits still reports too little headroom: attempting the create anyway (onStaleLimits: attempt)',
      );
      const { value: lc, ledger } = await call.ledger.run(
        'claimAnyway',
        (l) => l.claimAnyway(needs, g.opts.leaseTtlMs),
        (l, late) => l.release(late, 'not-created'),
        signal,
      );
      return holdClaim(g, lc, ledger);
    }
    // No shortfall: the reading and the claims fit, yet the ledger admitted nothing (settling after a holder reconnected).
    const ledgerHeld = call.ledger.waitedForLedger || shortfalls.length === 0;
    const why = ledgerHeld ? undefined : await this.#explain(shortfalls, readAtMs, true, signal);
    throw new QuotaWaitTimeoutError({
      message: call.ledger.shareShort
        ? `No quota headroom after waiting ${call.elapsedMs()} ms (maxWaitMs ${g.opts.maxWaitMs}): the quota ledger (${g.ledger.kind}) is out of reach, and this process admits only within its share of the quota without it: ${describeShortfalls(shortfalls)}`
        : call.ledger.waitedForLedger
        ? `No quota admission after waiting ${call.elapsedMs()} ms (maxWaitMs ${g.opts.maxWaitMs}): the quota ledger (${g.ledger.kind}) is out of reach, and this process, which has used it, does not admit without it (other hosts may still admit on it)`
        : shortfalls.length === 0
          ? `No quota admission after waiting ${call.elapsedMs()} ms (maxWaitMs ${g.opts.maxWaitMs}): the reading and the claims leave room, but the quota ledger (${g.ledger.kind}) admitted nothing (for example while it settles after a holder reconnected)`
          : `No quota headroom after waiting ${call.elapsedMs()} ms (maxWaitMs ${g.opts.maxWaitMs}): ${describeShortfalls(shortfalls)}${describeWhy(why)}`,
      requestId: headroom.requestId,
      resources: shortfallResources(shortfalls),
      waitedMs: call.elapsedMs(),
      maxWaitMs: g.opts.maxWaitMs,
      limitsReads: this.#limitsReads,
      headroom,
      needs,
      lastQuotaMessage: call.lastQuotaMessage,
      shortfallCause: why?.cause,
      finding: why?.finding,
    });
  }

  /**
   * A wait begins: its delay (the call's next backoff step, at most what is left of `maxWaitMs`, and
   * for a ledger never reached at most what is left of its wait, `DegradedLedger.neverReachedWaitLeftMs`),
   * counted, explained every {@link EXPLAIN_EVERY_WAITS} waits, reported through `onWait` and the
   * logger, with its reason ({@link QuotaWaitReason}; `queued`: the needs fit alone, not after the
   * places queued ahead). Resolves the delay, in ms.
   */
  async #noteWait(headroom: Headroom, shortfalls: Shortfall[], queued: boolean, readAtMs: number, remaining: number, signal: AbortSignal | undefined): Promise<number> {
    const g = this.#g;
    const call = this.#call;
    const needs = this.#needs;
    const stepMs = stepDelayMs(call.firstDelayMs, this.#waits + call.retriesConsumed, g.opts.maxDelayMs);
    let delayMs = Math.min(stepMs, Math.ceil(remaining));
    // A wait for a ledger never reached ends with its time left (`NEVER_REACHED_WAIT_MS`, the number
    // its warning prints): then the call admits alone, never one backoff step later.
    if (call.ledger.waitedForLedger && !g.res.hadGoodReading) delayMs = Math.min(delayMs, Math.ceil(g.res.neverReachedWaitLeftMs()));
    if (delayMs >= remaining) call.deadlineReached = true;
    this.#waits++;
    g.stats.waits++;
    const outOfReach = call.ledger.waitedForLedger;
    const why = this.#waits % EXPLAIN_EVERY_WAITS === 0 && !outOfReach && this.#explainsWaits() ? await this.#explain(shortfalls, readAtMs, false, signal) : undefined;
    const reason: QuotaWaitReason = outOfReach ? 'ledger-out-of-reach' : shortfalls.length === 0 ? 'ledger-settling' : queued ? 'queued' : 'short';
    const info: QuotaWaitInfo = { needs, reason, shortfalls, ledgerOutOfReach: outOfReach, headroom, delayMs, waits: this.#waits, posts: call.posts, elapsedMs: call.elapsedMs(), shortfallCause: why?.cause, finding: why?.finding };
    try {
      const r: unknown = g.opts.onWait?.(info);
      // An async hook's rejection is ignored like a throw (never an unhandled rejection).
      if (isThenable(r)) r.then(undefined, (e: unknown) => g.log.warn({ err: (e as Error)?.message }, 'onWait hook threw (ignored)'));
    } catch (e) {
      g.log.warn({ err: (e as Error)?.message }, 'onWait hook threw (ignored)');
    }
    if (outOfReach) g.log.info({ needs, delayMs, waits: this.#waits, ledger: g.ledger.kind }, 'quota ledger out of reach: waiting for it');
    else if (reason === 'ledger-settling') g.log.info({ needs, delayMs, waits: this.#waits, ledger: g.ledger.kind }, 'quota ledger admits nothing yet (it settles after a restart): waiting');
    else g.log.info({ needs, shortfalls: describeShortfalls(shortfalls), delayMs, waits: this.#waits, requestId: headroom.requestId }, 'not enough quota headroom: waiting');
    return delayMs;
  }

  /**
   * True when the waits of a call are explained (every {@link EXPLAIN_EVERY_WAITS}th): `explainShortfall`
   * on and an `onWait` hook to hand the answer to. Without a hook nobody reads it, and each check costs
   * a listing of the whole project (and a fresh `/limits` reading before it); the wait that runs out
   * is explained either way (its `QuotaWaitTimeoutError` carries the answer).
   */
  #explainsWaits(): boolean {
    return this.#g.opts.explainShortfall && this.#g.opts.onWait !== undefined;
  }

  /** The check of a shortfall (option `explainShortfall`) on a listing shared by the client's calls (`explain.ts`), or undefined when off, skipped (a wait's check within the listing interval) or failed (logged). `readAtMs`: when the reading of `shortfalls` answered, on the clock; `final`: the wait ran out. @throws {@link AbortError}. */
  async #explain(shortfalls: Shortfall[], readAtMs: number, final: boolean, signal: AbortSignal | undefined): Promise<ShortfallExplanation | undefined> {
    const g = this.#g;
    if (!g.opts.explainShortfall) return undefined;
    try {
      // The listing is shared by the client's calls: the deadline ends this call's wait for it.
      const servers = await withinCallDeadline(g, this.#call, 'GET /servers/detail', (s) => serversForCheck(g.client, readAtMs, final, s), signal);
      return servers && explainShortfall(servers, shortfalls, g.clock.wallNow() - this.#call.elapsedMs());
    } catch (e) {
      throwIfAborted(signal);
      g.log.warn({ err: (e as Error)?.message }, 'the check of the quota shortfall failed: cause unknown');
      return undefined;
    }
  }
}

function describeWhy(why: ShortfallExplanation | undefined): string {
  if (!why) return '';
  if (why.cause === 'busy-fleet') return "; the project's servers hold this quota (a busy fleet)";
  return `; Nova's books are wrong (${why.finding!.kind}): ${why.finding!.evidence}`;
}

/**
 * Note the deletions confirmed from now until `off()` (while an admission reads and decides: a
 * call at the head of the queue that was refused on a reading older than a freed server reads
 * again at once instead of sleeping).
 */
export function freedMeanwhile(g: GuardState): { readonly seen: () => boolean; readonly off: () => void } {
  let seen = false;
  const off = g.res.onFreed(() => (seen = true));
  return { seen: () => seen, off };
}

/**
 * Sleep `delayMs` on the clock, or less: a wake-up addressed to the call's place, or (with a
 * ledger that does not address them) any deletion confirmed in the fleet, or the ledger answering
 * again after an outage, ends the sleep at once. Meanwhile the client's watcher looks at the servers
 * being deleted at most `shortLookIntervalMs` apart (`askShortLooks`).
 * @throws {@link AbortError} when `signal` aborts.
 */
export async function sleepUntilWoken(g: GuardState, ledger: CallLedger, delayMs: number, signal: AbortSignal | undefined): Promise<void> {
  const woken = new AbortController();
  const wake = (): void => woken.abort();
  const offFreed = ledger.addressed ? undefined : g.res.onFreed(wake);
  const offRecovered = g.res.onRecovered(wake);
  const offWake = ledger.wakeWith(wake);
  // While it sleeps, the client's watcher looks at the servers being deleted at the short interval.
  const endShortLooks = Number.isFinite(g.opts.shortLookIntervalMs) ? askShortLooks(g.client, g.opts.shortLookIntervalMs) : undefined;
  try {
    await sleep(g.clock, delayMs, signal ? AbortSignal.any([signal, woken.signal]) : woken.signal);
  } catch (e) {
    throwIfAborted(signal);
    if (!woken.signal.aborted) throw e;
  } finally {
    offWake();
    endShortLooks?.();
    offFreed?.();
    offRecovered();
  }
  throwIfAborted(signal);
}
