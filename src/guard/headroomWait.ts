/**
 * The wait for headroom before a guarded attempt: read `GET /limits` (Nova API reference, "Limits"),
 * check and claim in the same tick, and while short wait and read again.
 *
 * This is a wait p-retry cannot express, so it is the guard's own, on the client's clock: it is
 * served first come, first served among the calls of one guard, and a deletion confirmed by the
 * guard's own client (`onDeleteConfirmed`: Nova has freed quota) ends it at once. Its delays follow
 * the call's backoff ({@link backoffDelayMs}'s formula): a wait doubles with every wait or retry of
 * the call before it.
 *
 * @module
 */
import { InvalidResponseError, NotFoundError, QuotaExceededError, throwIfAborted } from '../errors/index.js';
import { onDeleteConfirmed } from '../delete/index.js';
import { sleep } from '../core/clock.js';
import type { AbsoluteLimits, ResourceAmounts } from '../core/types.js';
import type { Claim } from './claims.js';
import { LIMIT_KEYS, addNeeds, checkFit, computeHeadroom, describeShortfalls, isAnything, NO_NEEDS, shortfallResources, type FitVerdict, type Headroom } from './headroom.js';
import { QuotaWaitTimeoutError } from './errors.js';
import { stepDelayMs } from './backoff.js';
import type { QuotaWaitInfo } from './options.js';
import { elapsedMs, remainingMs, warnOnce, type GuardState, type GuardedCall } from './state.js';

/** A fresh headroom, and when `needs` was given, the fit and (if it fits) the claim. */
export interface HeadroomRead {
  headroom: Headroom;
  fit?: FitVerdict | undefined;
  claim?: Claim | undefined;
}

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
 * Fresh `/limits` → headroom; when `needs` is given, check and (if it fits, and what is left still
 * serves `ahead`: the needs of the calls queued before) claim, all in the same tick as the
 * computation so that no other caller of this guard can pass on the same numbers.
 *
 * @throws the client's errors of `GET /limits`; {@link AbortError}.
 */
export async function readHeadroom(g: GuardState, signal: AbortSignal | undefined, needs?: ResourceAmounts, ahead: ResourceAmounts = NO_NEEDS): Promise<HeadroomRead> {
  await refreshUnwatched(g, signal);
  const token = g.ledger.beginRead();
  try {
    const limits = await readLimits(g, signal);
    // Synchronous from here to the claim.
    const headroom = computeHeadroom(limits.absolute, g.ledger.inFlight(token), { requestId: limits.requestId, readAtMs: g.clock.wallNow() });
    if (!needs) return { headroom };
    const fit = checkFit(needs, headroom);
    if (fit.verdict !== 'fits') return { headroom, fit };
    if (isAnything(ahead)) {
      const withAhead = checkFit(addNeeds(needs, ahead), headroom);
      if (withAhead.verdict !== 'fits') return { headroom, fit: { verdict: 'short', shortfalls: withAhead.shortfalls } };
    }
    return { headroom, fit, claim: g.ledger.claim(needs) };
  } finally {
    g.ledger.endRead(token);
  }
}

/** With `waitForActive: false`: end the claims of servers that have left BUILD (or are gone). */
async function refreshUnwatched(g: GuardState, signal: AbortSignal | undefined): Promise<void> {
  const claims = g.ledger.unwatched();
  if (claims.length === 0) return;
  await Promise.all(
    claims.map(async (c) => {
      if (g.clock.now() - c.claimedAtMs > g.opts.activeTimeoutMs) {
        g.ledger.release(c, 'counted');
        return;
      }
      try {
        const s = await g.client.getServer(c.serverId!, { signal });
        if (String(s.status ?? '').toUpperCase() !== 'BUILD') g.ledger.release(c, 'counted');
      } catch (e) {
        if (e instanceof NotFoundError) g.ledger.release(c, 'not-created');
        else if (signal?.aborted) throw e;
        // otherwise keep the claim: it errs on the side of waiting
      }
    }),
  );
}

/** Needs of the calls queued before `place` (all queued calls when `place` is not queued yet). */
function aheadOf(g: GuardState, place: { needs: ResourceAmounts }): ResourceAmounts {
  let ahead: ResourceAmounts = NO_NEEDS;
  for (const q of g.queue) {
    if (q === place) break;
    ahead = addNeeds(ahead, q.needs);
  }
  return ahead;
}

/**
 * Read, check and claim; wait while short. Resolves the claim.
 *
 * @throws {@link QuotaExceededError} `permanent: true` when `needs` is above a limit itself (0
 * POSTs); {@link QuotaWaitTimeoutError} when `maxWaitMs` runs out while short (unless
 * `onStaleLimits: 'attempt'`, which claims anyway); {@link AbortError}; the client's errors.
 */
export async function waitForHeadroom(g: GuardState, call: GuardedCall, needs: ResourceAmounts, signal: AbortSignal | undefined): Promise<Claim> {
  const place = { needs };
  try {
    for (;;) {
      const { headroom, claim, fit } = await readHeadroom(g, signal, needs, aheadOf(g, place));
      call.limitsReads++;
      if (claim) return claim;
      const shortfalls = fit!.shortfalls;
      if (fit!.verdict === 'never') {
        throw new QuotaExceededError({
          status: 0,
          message: `Quota can never fit this request (needed above the limit itself): ${describeShortfalls(shortfalls)}`,
          requestId: headroom.requestId,
          resources: shortfallResources(shortfalls),
          permanent: true,
        });
      }
      const remaining = remainingMs(g, call);
      if (call.deadlineReached || remaining <= 0) {
        if (g.opts.onStaleLimits === 'attempt') {
          g.log.warn(
            { shortfalls: describeShortfalls(shortfalls), elapsedMs: elapsedMs(g, call) },
            'maxWaitMs spent and /limits still reports too little headroom: attempting the create anyway (onStaleLimits: attempt)',
          );
          return g.ledger.claim(needs);
        }
        throw new QuotaWaitTimeoutError({
          message: `No quota headroom after waiting ${elapsedMs(g, call)} ms (maxWaitMs ${g.opts.maxWaitMs}): ${describeShortfalls(shortfalls)}`,
          requestId: headroom.requestId,
          resources: shortfallResources(shortfalls),
          waitedMs: elapsedMs(g, call),
          maxWaitMs: g.opts.maxWaitMs,
          limitsReads: call.limitsReads,
          headroom,
          needs,
          lastQuotaMessage: call.lastQuotaMessage,
        });
      }
      const stepMs = stepDelayMs(call.firstDelayMs, call.waits + call.retriesConsumed, g.opts.maxDelayMs);
      const delayMs = Math.min(stepMs, Math.ceil(remaining));
      if (delayMs >= remaining) call.deadlineReached = true;
      call.waits++;
      g.stats.waits++;
      const info: QuotaWaitInfo = { needs, shortfalls, headroom, delayMs, waits: call.waits, posts: call.posts, elapsedMs: elapsedMs(g, call) };
      try {
        g.opts.onWait?.(info);
      } catch (e) {
        g.log.warn({ err: (e as Error)?.message }, 'onWait hook threw (ignored)');
      }
      g.log.info({ needs, shortfalls: describeShortfalls(shortfalls), delayMs, waits: call.waits, requestId: headroom.requestId }, 'not enough quota headroom: waiting');
      if (!g.queue.includes(place)) g.queue.push(place);
      await sleepUntilFreed(g, delayMs, signal);
    }
  } finally {
    const i = g.queue.indexOf(place);
    if (i >= 0) g.queue.splice(i, 1);
  }
}

/**
 * Sleep `delayMs` on the clock, or less: a deletion confirmed by the guard's client (Nova has freed
 * quota) ends the sleep at once.
 * @throws {@link AbortError} when `signal` aborts.
 */
async function sleepUntilFreed(g: GuardState, delayMs: number, signal: AbortSignal | undefined): Promise<void> {
  const freed = new AbortController();
  const unsubscribe = onDeleteConfirmed(g.client, () => freed.abort());
  try {
    await sleep(g.clock, delayMs, signal ? AbortSignal.any([signal, freed.signal]) : freed.signal);
  } catch (e) {
    throwIfAborted(signal);
    if (!freed.signal.aborted) throw e;
  } finally {
    unsubscribe();
  }
  throwIfAborted(signal);
}
