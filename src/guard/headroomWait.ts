/**
 * The wait for headroom before a guarded attempt: read `GET /limits` (Nova API reference, "Limits"),
 * check and claim in the same tick, and while short wait and read again.
 *
 * The reading, the claims and the queue are the ledger's (`ledger.ts`: `limits`, then `admit`
 * against raw headroom; `join` at the first wait, `leave` when the wait ends). This is a wait
 * p-retry cannot express, so it is the guard's own, on the client's clock: it is served first come,
 * first served among the calls that share the ledger, and freed quota (a deletion Nova confirmed, to
 * this guard's client or, through the ledger, anyone's) ends it at once for the call it may admit
 * (`wakeUps.ts`: the head of the queue, when the ledger addresses wake-ups). Its delays follow
 * the call's backoff ({@link backoffDelayMs}'s formula): a wait doubles with every wait or retry of
 * the call before it.
 *
 * @module
 */
import { InvalidResponseError, NotFoundError, throwIfAborted } from '../errors/index.js';
import { sleep } from '../core/clock.js';
import { traceHeadroomWait } from '../core/telemetry.js';
import type { AbsoluteLimits, ResourceAmounts } from '../core/types.js';
import { statusOf } from '../core/counting.js';
import { LIMIT_KEYS, addNeeds, checkFit, computeHeadroom, describeShortfalls, NO_NEEDS, rawHeadroomOf, shortfallResources, type FitVerdict, type Headroom } from './headroom.js';
import { holdClaim, ledgerBudgetMs, leaveInBackground, inFlightOf, moveToFallback, onLedger, releaseClaim } from './ledgerUse.js';
import { dropPlace, freedMeanwhile, holdPlace, sleepUntilWoken } from './wakeUps.js';
import { acquireThroughLedger, readThroughLedger } from './ledgerRead.js';
import { listUncounted } from './uncounted.js';
import { keepLease, renewBeforePost, renewQuietly } from './leases.js';
import { QuotaNeverFitsError, QuotaWaitTimeoutError } from './errors.js';
import { stepDelayMs } from './backoff.js';
import { EXPLAIN_EVERY_WAITS, type QuotaWaitInfo } from './options.js';
import { explainShortfall, type ShortfallExplanation } from './explain.js';
import { serversForCheck } from './explainShare.js';
import type { Shortfall } from './headroom.js';
import type { Admission, LedgerClaim, LedgerLimits } from './ledger.js';
import { admitDegraded } from './degradedUse.js';
import { elapsedMs, remainingMs, warnOnce, type Claim, type GuardState, type GuardedCall } from './state.js';

/**
 * `GET /limits`, or "unknown" when Nova answered 2xx with a body of another shape: without the
 * `limits` envelope (`{"absolute": {...}}`), `{}`, an HTML page. Unknown headroom never blocks and
 * never throws: the guard warns once and lets Nova's own check decide (the POST, then the quota 403
 * path). Other errors (5xx, network, abort) are thrown as the client throws them.
 */
async function readLimits(g: GuardState, signal: AbortSignal | undefined): Promise<{ absolute: AbsoluteLimits; requestId: string | undefined }> {
  let absolute: AbsoluteLimits;
  let requestId: string | undefined;
  try {
    ({ absolute, requestId } = await g.client.getLimits({ signal }));
  } catch (e) {
    if (!(e instanceof InvalidResponseError)) throw e;
    warnOnce(g, 'limits-shape', { requestId: e.requestId, err: e.message }, 'GET /limits answered a body without limits.absolute: headroom unknown, Nova decides');
    return { absolute: {}, requestId: e.requestId };
  }
  const known = Object.values(LIMIT_KEYS).some((k) => absolute[k.max] !== undefined && absolute[k.used] !== undefined);
  if (!known) warnOnce(g, 'limits-empty', { requestId }, 'GET /limits gave no usable limit of cores, RAM or instances: headroom unknown, Nova decides');
  return { absolute, requestId };
}

/**
 * Fresh `/limits` (through the ledger) → headroom minus the ledger's claims. The guard's
 * `headroom()`.
 *
 * @throws the client's errors of `GET /limits`; {@link AbortError}.
 */
export async function readHeadroom(g: GuardState, signal: AbortSignal | undefined): Promise<Headroom> {
  await refreshUnwatched(g, signal);
  const { reading, ledger } = await readThroughLedger(g, undefined, (s) => readLimits(g, s), signal);
  const inFlight = (await inFlightOf(g, ledger, reading.stamp, signal)) ?? NO_NEEDS;
  return computeHeadroom(reading.absolute, inFlight, { requestId: reading.requestId, readAtMs: g.clock.wallNow() });
}

/**
 * One admission: with a ledger that has `acquire`, one call of it (reading, check and claim, and a
 * place when short); otherwise fresh `/limits` through the call's ledger, raw headroom, then the
 * ledger's `admit` (check and claim atomically, after the claims in flight and the needs of the
 * places queued ahead).
 */
async function admitOnce(g: GuardState, call: GuardedCall, needs: ResourceAmounts, signal: AbortSignal | undefined): Promise<{ headroom: Headroom; fit?: FitVerdict; claim?: Claim; head?: boolean }> {
  await refreshUnwatched(g, signal);
  // A call moved to the fallback by an outage goes back to the guard's ledger once it is up
  // (asking the wrapper also probes a ledger that is down, when a probe is due).
  if (call.ledger === g.fallback && call.fallbackForOutage && !g.res.skip(g, ledgerBudgetMs(g))) {
    call.ledger = g.ledger;
    call.fallbackForOutage = false;
    if (call.place?.ledger === g.fallback) leaveInBackground(g, dropPlace(call)!);
  }
  call.waitedForLedger = false;
  const sentAt = g.clock.now();
  const acquired = await acquireThroughLedger(g, call, needs, (s) => readLimits(g, s), signal, (s) => listUncounted(g.client, s));
  if (acquired) {
    const { value: a, ledger } = acquired;
    if (a.place && call.place?.place !== a.place) holdPlace(g, call, { ledger, place: a.place });
    if (ledger !== g.fallback) g.res.noteGoodReading();
    return verdictOf(g, needs, a.reading, a, (lc) => holdClaim(g, lc, ledger, sentAt));
  }
  const { reading } = await readThroughLedger(g, call, (s) => readLimits(g, s), signal);
  const raw = rawHeadroomOf(reading.absolute);
  const admitSentAt = g.clock.now();
  const { value: admission, ledger } = await onLedger(
    g,
    call,
    'admit',
    (l) => l.admit({ place: call.place?.ledger === l ? call.place.place : undefined, needs, headroom: raw, stamp: reading.stamp, ttlMs: g.opts.leaseTtlMs }),
    async (l, late) => {
      if (late.admitted) await l.release(late.claim, 'not-created');
    },
    signal,
  );
  const hold = (lc: LedgerClaim): Claim => holdClaim(g, lc, ledger, admitSentAt);
  if (ledger === g.fallback && admission.admitted) {
    const headroom = computeHeadroom(reading.absolute, admission.inFlight, { requestId: reading.requestId, readAtMs: g.clock.wallNow() });
    return { headroom, ...(await admitDegraded(g, call, needs, headroom, admission.claim, hold)) };
  }
  if (ledger !== g.fallback) g.res.noteGoodReading();
  return verdictOf(g, needs, reading, admission, hold);
}

/** The headroom after the ledger's claims, and the claim held or why not (`head`: no place queued ahead). */
function verdictOf(g: GuardState, needs: ResourceAmounts, reading: LedgerLimits, admission: Admission, hold: (lc: LedgerClaim) => Claim): { headroom: Headroom; fit?: FitVerdict; claim?: Claim; head?: boolean } {
  const headroom = computeHeadroom(reading.absolute, admission.inFlight, { requestId: reading.requestId, readAtMs: g.clock.wallNow() });
  if (admission.admitted) return { headroom, claim: hold(admission.claim) };
  const head = Object.values(admission.ahead).every((v) => !v);
  const fit = checkFit(needs, headroom);
  if (fit.verdict !== 'fits') return { headroom, fit, head };
  // Fits alone, not after the places queued ahead.
  return { headroom, fit: { verdict: 'short', shortfalls: checkFit(addNeeds(needs, admission.ahead), headroom).shortfalls }, head };
}

/**
 * With `waitForActive: false`: end the claims of servers that have left BUILD (or are gone), and
 * renew the leases of the others (nobody renews them on a timer: a claim not seen by a read within
 * `leaseTtlMs` expires).
 */
async function refreshUnwatched(g: GuardState, signal: AbortSignal | undefined): Promise<void> {
  const claims = [...g.claims].filter((c) => c.unwatched && c.serverId !== undefined);
  if (claims.length === 0) return;
  await Promise.all(
    claims.map(async (c) => {
      if (g.clock.now() - c.claimedAtMs > g.opts.activeTimeoutMs) {
        await releaseClaim(g, c, 'counted');
        return;
      }
      if (!(await renewQuietly(g, c))) {
        // The ledger dropped it: nothing left to release there.
        await releaseClaim(g, c, 'counted');
        return;
      }
      try {
        const s = await g.client.getServer(c.serverId!, { signal });
        if (statusOf(s) !== 'BUILD') await releaseClaim(g, c, 'counted');
      } catch (e) {
        if (e instanceof NotFoundError) await releaseClaim(g, c, 'not-created');
        else if (signal?.aborted) throw e;
        // otherwise keep the claim: it errs on the side of waiting
      }
    }),
  );
}

/**
 * Read, check and claim; wait while short. Resolves the claim.
 *
 * @throws {@link QuotaNeverFitsError} when `needs` is above a limit itself (0
 * POSTs); {@link QuotaWaitTimeoutError} when `maxWaitMs` runs out while short, while the ledger is
 * out of reach for a process that has used it (`degradedUse.ts`), or while the ledger admits nothing
 * although the reading fits (unless `onStaleLimits: 'attempt'`, which claims anyway); {@link AbortError};
 * the client's errors.
 */
export async function waitForHeadroom(g: GuardState, call: GuardedCall, needs: ResourceAmounts, signal: AbortSignal | undefined): Promise<Claim> {
  try {
    for (;;) {
      // A wake-up or a freed server while this admission reads and decides ends the next sleep at once.
      const wakesBefore = call.wakes;
      const freed = freedMeanwhile(g);
      let admitted: Awaited<ReturnType<typeof admitOnce>>;
      try {
        admitted = await admitOnce(g, call, needs, signal);
      } finally {
        freed.off();
      }
      const { headroom, claim, fit } = admitted;
      const readAtMs = g.clock.now();
      call.limitsReads++;
      if (claim) return claim;
      const shortfalls = fit!.shortfalls;
      if (fit!.verdict === 'never') {
        throw new QuotaNeverFitsError({ requestId: headroom.requestId, shortfalls, needs, headroom });
      }
      const remaining = remainingMs(g, call);
      if (call.deadlineReached || remaining <= 0) {
        if (g.opts.onStaleLimits === 'attempt') {
          g.log.warn(
            { shortfalls: describeShortfalls(shortfalls), elapsedMs: elapsedMs(g, call) },
            'maxWaitMs spent and /limits still reports too little headroom: attempting the create anyway (onStaleLimits: attempt)',
          );
          const { value: lc, ledger } = await onLedger(
            g,
            call,
            'claimAnyway',
            (l) => l.claimAnyway(needs, g.opts.leaseTtlMs),
            (l, late) => l.release(late, 'not-created'),
            signal,
          );
          return holdClaim(g, lc, ledger);
        }
        // No shortfall: the reading and the claims fit, yet the ledger admitted nothing (settling after a holder reconnected).
        const ledgerHeld = call.waitedForLedger || shortfalls.length === 0;
        const why = ledgerHeld ? undefined : await explain(g, call, shortfalls, readAtMs, true, signal);
        throw new QuotaWaitTimeoutError({
          message: call.waitedForLedger
            ? `No quota admission after waiting ${elapsedMs(g, call)} ms (maxWaitMs ${g.opts.maxWaitMs}): the quota ledger (${g.ledger.kind}) is out of reach, and this process, which has used it, does not admit without it (other hosts may still admit on it)`
            : shortfalls.length === 0
              ? `No quota admission after waiting ${elapsedMs(g, call)} ms (maxWaitMs ${g.opts.maxWaitMs}): the reading and the claims leave room, but the quota ledger (${g.ledger.kind}) admitted nothing (for example while it settles after a holder reconnected)`
              : `No quota headroom after waiting ${elapsedMs(g, call)} ms (maxWaitMs ${g.opts.maxWaitMs}): ${describeShortfalls(shortfalls)}${describeWhy(why)}`,
          requestId: headroom.requestId,
          resources: shortfallResources(shortfalls),
          waitedMs: elapsedMs(g, call),
          maxWaitMs: g.opts.maxWaitMs,
          limitsReads: call.limitsReads,
          headroom,
          needs,
          lastQuotaMessage: call.lastQuotaMessage,
          shortfallCause: why?.cause,
          finding: why?.finding,
        });
      }
      const stepMs = stepDelayMs(call.firstDelayMs, call.waits + call.retriesConsumed, g.opts.maxDelayMs);
      const delayMs = Math.min(stepMs, Math.ceil(remaining));
      if (delayMs >= remaining) call.deadlineReached = true;
      call.waits++;
      g.stats.waits++;
      const why = call.waits % EXPLAIN_EVERY_WAITS === 0 && !call.waitedForLedger ? await explain(g, call, shortfalls, readAtMs, false, signal) : undefined;
      const info: QuotaWaitInfo = { needs, shortfalls, ledgerOutOfReach: call.waitedForLedger, headroom, delayMs, waits: call.waits, posts: call.posts, elapsedMs: elapsedMs(g, call), shortfallCause: why?.cause, finding: why?.finding };
      try {
        g.opts.onWait?.(info);
      } catch (e) {
        g.log.warn({ err: (e as Error)?.message }, 'onWait hook threw (ignored)');
      }
      if (call.waitedForLedger) g.log.info({ needs, delayMs, waits: call.waits, ledger: g.ledger.kind }, 'quota ledger out of reach: waiting for it');
      else g.log.info({ needs, shortfalls: describeShortfalls(shortfalls), delayMs, waits: call.waits, requestId: headroom.requestId }, 'not enough quota headroom: waiting');
      if (call.place?.ledger !== call.ledger) {
        const { value: place, ledger } = await onLedger(
          g,
          call,
          'join',
          (l) => l.join(needs),
          (l, late) => l.leave(late),
          signal,
        );
        holdPlace(g, call, { ledger, place });
      }
      // Woken meanwhile: a wake-up addressed to the call's place, or a freed server while it was
      // the head of the queue (its reading may be older than the freed server): read again at once.
      if (call.wakes !== wakesBefore || (freed.seen() && admitted.head === true)) throwIfAborted(signal);
      else await sleepUntilWoken(g, call, delayMs, signal);
    }
  } finally {
    // Leaving never delays the settle: sent now, bounded, in the background (a place not left
    // expires by the ledger's place lease).
    const held = dropPlace(call);
    if (held) leaveInBackground(g, held);
  }
}

/** The check of a shortfall (option `explainShortfall`) on a listing shared by the client's calls (`explainShare.ts`), or undefined when off, skipped (a wait's check within the listing interval) or failed (logged). `readAtMs`: when the reading of `shortfalls` answered, on the clock; `final`: the wait ran out. @throws {@link AbortError}. */
async function explain(g: GuardState, call: GuardedCall, shortfalls: Shortfall[], readAtMs: number, final: boolean, signal: AbortSignal | undefined): Promise<ShortfallExplanation | undefined> {
  if (!g.opts.explainShortfall) return undefined;
  try {
    const servers = await serversForCheck(g.client, readAtMs, final, signal);
    return servers && explainShortfall(servers, shortfalls, g.clock.wallNow() - elapsedMs(g, call));
  } catch (e) {
    throwIfAborted(signal);
    g.log.warn({ err: (e as Error)?.message }, 'the check of the quota shortfall failed: cause unknown');
    return undefined;
  }
}

function describeWhy(why: ShortfallExplanation | undefined): string {
  if (!why) return '';
  if (why.cause === 'busy-fleet') return "; the project's servers hold this quota (a busy fleet)";
  return `; Nova's books are wrong (${why.finding!.kind}): ${why.finding!.evidence}`;
}

/**
 * The claim for one attempt: `held` (kept from a refused POST) or a new one from
 * {@link waitForHeadroom}; its lease renewed right before the POST (the fencing rule: a lost lease
 * means no POST, the call goes back to admission after its next backoff step), then kept renewed
 * until the claim ends. A renewal that fails moves the call to the fallback ledger; it goes back to
 * the ledger at its next admission, after a backoff step (while the ledger is out of reach, a
 * process it has answered before waits for it: `degradedUse.ts`). A call that keeps losing leases
 * (or failing renewals on a ledger that admits) past `maxWaitMs` stays on the fallback, so a ledger
 * that answers never blocks a create for good.
 * `fresh`: the claim did not come from `held` (the attempt counts).
 */
export async function claimForAttempt(g: GuardState, call: GuardedCall, needs: ResourceAmounts, held: Claim | undefined, signal: AbortSignal | undefined): Promise<{ claim: Claim; fresh: boolean }> {
  let kept = held;
  for (;;) {
    // QuotaGuard.close() ends a wait for headroom (AbortError): nothing of a closed guard keeps reading /limits.
    const waitSignal = signal ? AbortSignal.any([signal, g.closing.signal]) : g.closing.signal;
    const claim = kept ?? (await traceHeadroomWait(() => g.clock.now(), () => waitForHeadroom(g, call, needs, waitSignal)));
    if (await renewBeforePost(g, call, claim, signal)) {
      keepLease(g, claim);
      return { claim, fresh: claim !== held };
    }
    kept = undefined;
    // A failed renewal moved the call to the fallback; it goes back to the ledger at its next
    // admission, after a backoff step that doubles like a wait (a failing ledger gets fewer calls).
    if (call.ledger === g.fallback && claim.ledger !== g.fallback) call.waits++;
    const remaining = remainingMs(g, call);
    if (remaining <= 0) {
      moveToFallback(g, call, false);
      continue;
    }
    await sleep(g.clock, Math.min(stepDelayMs(call.firstDelayMs, call.waits + call.retriesConsumed, g.opts.maxDelayMs), Math.ceil(remaining)), signal);
  }
}
