/**
 * The guard's side of the {@link QuotaLedger} protocol (see `src/ledger/port.ts`): every call of the ledger
 * bounded in time, the fallback to a private in-process ledger, claims and their leases, and the
 * metadata that tags what a claim creates.
 *
 * Fallback (Nova stays the authority): when a call of the guard's ledger rejects or runs past its
 * time limit, the guard warns once (then logs at debug level), counts `stats.ledgerFallbacks`, and
 * the guarded call goes on with the private `InProcessQuotaLedger` of the ledger's wrapper
 * (`degradedLedger.ts`: its claims and queue cover this process's calls only; Nova's quota 403
 * path covers the rest). The call's side of that move is its `CallLedger` (`callLedger.ts`). Once
 * the ledger has answered an admission of this process, an admission on the fallback waits for the
 * ledger, or, once no claim of this process can still be live in it, is bound by the process's
 * share of the quota (`degradedLedger.ts`); such claims are re-claimed on the ledger when it
 * answers ({@link reclaimDegraded}). A claim is always released on the ledger it came from. The
 * next guarded call starts on the guard's ledger again, so a ledger that comes back is used again;
 * a ledger the wrapper knows to be down is skipped at once (no wait) until a probe finds it back.
 *
 * @module
 */
import pTimeout, { TimeoutError } from 'p-timeout';
import { pTimeoutTimers } from '../core/clock.js';
import type { ResourceAmounts } from '../core/types.js';
import { throwIfAborted } from '../errors/index.js';
import type { LedgerClaim, QuotaLedger } from '../ledger/index.js';
import { warnOnce, type Claim, type GuardState } from './state.js';

/** Metadata key of the claim's id on every server the guard creates. */
export const CLAIM_ID_KEY = 'nova-guard-claim-id';
/** Metadata key of the claim's fencing token. */
export const CLAIM_TOKEN_KEY = 'nova-guard-token';
/** Metadata key of the claim's holder (host and process by default). */
export const CLAIM_HOLDER_KEY = 'nova-guard-holder';
/** Longest metadata value Nova takes (Nova API reference, "Create Server": `metadata`). */
const METADATA_VALUE_MAX = 255;

/** The time budget of one ledger call, in ms: `max(ledgerTimeoutMs, ledger.callBudgetMs())`. */
export function ledgerBudgetMs(g: GuardState): number {
  return g.res.budgetMs(g.opts.ledgerTimeoutMs);
}

/**
 * Tell the degraded mode how a call of the guard's ledger sent at `sentAtMs` ended: an answer, or a
 * failure (a time-out counts toward "down" only when the limit was the whole budget, not a
 * `maxWaitMs` cut).
 */
function report(g: GuardState, e: unknown | undefined, limitMs: number, sentAtMs: number): void {
  if (e === undefined) g.res.succeeded(sentAtMs);
  else g.res.failed(e, e instanceof TimeoutError && limitMs >= ledgerBudgetMs(g), sentAtMs);
}

/**
 * `work()` (a call of the guard's ledger) bounded on the guard's clock by `limitMs` (default the
 * budget, {@link ledgerBudgetMs}) and by `signal`; a synchronous throw becomes a rejection. The
 * outcome is reported to the ledger's wrapper (health).
 * @throws {@link AbortError} when `signal` aborts first (the ledger call is abandoned, not undone).
 */
export async function bounded<T>(g: GuardState, what: string, work: () => Promise<T>, signal?: AbortSignal, limitMs: number = ledgerBudgetMs(g)): Promise<T> {
  throwIfAborted(signal);
  const sentAtMs = g.clock.now();
  let p: Promise<T>;
  try {
    p = work();
  } catch (e) {
    p = Promise.reject(e);
  }
  let value: T;
  try {
    value = await pTimeout(p, { milliseconds: limitMs, signal, customTimers: pTimeoutTimers(g.clock), message: `ledger ${what} took longer than ${limitMs} ms` });
  } catch (e) {
    if (signal?.aborted) g.res.mayHaveLanded(sentAtMs);
    throwIfAborted(signal);
    report(g, e, limitMs, sentAtMs);
    throw e;
  }
  report(g, undefined, limitMs, sentAtMs);
  return value;
}

/**
 * Cleanup on a ledger (`leave`, `release`) that must not hold up the guarded call: run now, in the
 * background, bounded by the budget and never by the caller's signal (an aborted call still
 * leaves and releases). A failure goes to `onError` and is sent again when an outage of the
 * ledger ends (`DegradedLedger.redoWhenBack`); what is not undone expires by its lease
 * (`leaseTtlMs` for a claim, the ledger's place lease for a place). Never sends a Nova request.
 */
export function inBackground(g: GuardState, ledger: QuotaLedger, what: string, work: () => Promise<void>, onError: (e: unknown) => void = () => undefined): void {
  boundedUnlessFallback(g, ledger, what, work).catch((e: unknown) => {
    // sent again when an outage of the ledger ends (a place or claim left there holds the fleet's queue)
    if (ledger !== g.fallback) g.res.redoWhenBack(() => bounded(g, what, work));
    onError(e);
  });
}

/**
 * `work()` on `ledger`: {@link bounded} for the guard's ledger; run as it is on the guard's own
 * fallback (in-process, never hangs). A synchronous throw becomes a rejection either way.
 */
export function boundedUnlessFallback<T>(g: GuardState, ledger: QuotaLedger, what: string, work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  if (ledger !== g.fallback) return bounded(g, what, work, signal);
  try {
    return work();
  } catch (e) {
    return Promise.reject(e);
  }
}

/**
 * Note a failed call of `ledger`: one warning, a counter. `cut`: the call ran out of what was left
 * of its guarded call's `maxWaitMs` (a limit below the ledger's budget), not of the ledger's own
 * budget: the guarded call's deadline, not a ledger failure (logged at debug level, no warning).
 */
export function noteFallback(g: GuardState, ledger: QuotaLedger, what: string, e: unknown, cut = false): void {
  g.stats.ledgerFallbacks++;
  if (cut) {
    g.log.debug({ ledger: ledger.kind, call: what, err: (e as Error)?.message }, `quota ledger (${ledger.kind}) call cut short by the guarded call's maxWaitMs: going on with the in-process ledger`);
    return;
  }
  // A ledger known down has had its one outage warning (degradedLedger.ts).
  if (g.res.down) {
    g.log.debug({ ledger: ledger.kind, call: what, err: (e as Error)?.message }, `quota ledger (${ledger.kind}) failed: going on with the in-process ledger`);
    return;
  }
  if (!g.warned.has('ledger-fallback')) g.res.noteWarned();
  warnOnce(
    g,
    'ledger-fallback',
    { ledger: ledger.kind, call: what, err: (e as Error)?.message },
    g.res.hadGoodReading
      ? `quota ledger (${ledger.kind}) failed: creates wait for it (other hosts may still admit on it)`
      : `quota ledger (${ledger.kind}) failed: going on with the in-process ledger, Nova's quota check decides the rest`,
  );
}

/** What a ledger would subtract for claims for a reading of `stamp` (`undefined` when it cannot tell, or fails). */
export async function inFlightOf(g: GuardState, ledger: QuotaLedger, stamp: number, signal?: AbortSignal): Promise<ResourceAmounts | undefined> {
  const inFlight = ledger.inFlight?.bind(ledger);
  if (!inFlight) return undefined;
  try {
    return await boundedUnlessFallback(g, ledger, 'inFlight', () => inFlight(stamp), signal);
  } catch (e) {
    throwIfAborted(signal);
    noteFallback(g, ledger, 'inFlight', e);
    return undefined;
  }
}

/**
 * Hold `lc` (from `ledger`) as one of the guard's claims. `sentAtMs`: when the call that took it
 * was sent, on the guard's clock (the lease runs from then at the latest); default now.
 */
export function holdClaim(g: GuardState, lc: LedgerClaim, ledger: QuotaLedger, sentAtMs: number = g.clock.now()): Claim {
  const now = g.clock.now();
  const claim: Claim = { lc, ledger, needs: lc.needs, claimedAtMs: now, leaseFromMs: Math.min(sentAtMs, now), coverUntilMs: 0, degraded: false, serverId: undefined, unwatched: false, ended: false, stopRenewal: undefined };
  g.claims.add(claim);
  return claim;
}

/**
 * End a claim on the ledger it came from (idempotent). The release is sent at once and runs in the
 * background, bounded by `ledgerTimeoutMs` (a hung ledger never delays the guarded call); a failure
 * is logged and the claim's lease, no longer renewed, expires within `leaseTtlMs`.
 */
export async function releaseClaim(g: GuardState, claim: Claim, end: 'not-created' | 'counted'): Promise<void> {
  if (claim.ended) return;
  claim.ended = true;
  claim.stopRenewal?.();
  g.claims.delete(claim);
  // Deleted again by the guard (or never made): no longer this process's (the share rule, `degradedShare.ts`).
  if (end === 'not-created' && claim.serverId !== undefined) g.res.share.freed(claim.serverId);
  inBackground(g, claim.ledger, 'release', () => claim.ledger.release(claim.lc, end), (e) =>
    warnOnce(g, 'ledger-release', { ledger: claim.ledger.kind, claimId: claim.lc.id, err: (e as Error)?.message }, 'quota ledger could not release a claim: its lease expires instead'),
  );
}

/**
 * Note the created server on the claim's ledger: sent at once, in the background, bounded by
 * `ledgerTimeoutMs` (a failure is logged, nothing more; it never delays the create).
 */
export async function bindClaim(g: GuardState, claim: Claim, serverId: string): Promise<void> {
  claim.serverId = serverId;
  g.res.share.hold(serverId, claim.needs);
  // The POST has answered: a lease stretched to cover it goes back to `leaseTtlMs` (before the bind,
  // so a holder that dies once its server is bound loses the claim within `leaseTtlMs`).
  const stretched = claim.coverUntilMs > g.clock.now() + g.opts.leaseTtlMs;
  claim.coverUntilMs = 0;
  const lc = claim.lc;
  const shrink = async (): Promise<void> => {
    if (stretched) await claim.ledger.renew(lc, g.opts.leaseTtlMs);
  };
  inBackground(g, claim.ledger, 'bind', () => shrink().then(() => claim.ledger.bind(lc, serverId)), (e) =>
    warnOnce(g, 'ledger-bind', { ledger: claim.ledger.kind, claimId: claim.lc.id, err: (e as Error)?.message }, 'quota ledger could not note the created server'),
  );
}

/**
 * Tell the guard's ledger (and its fallback) that Nova confirmed a deletion: in the background,
 * bounded, and awaited by `close()` (so a ledger closed right after the guard has nothing in
 * flight). A failure is no fallback (no call goes on elsewhere): logged once (at debug level once
 * the guard is closing); the other holders learn of the freed quota at their next read.
 */
export function publishFreed(g: GuardState, serverId: string): void {
  g.res.share.freed(serverId);
  void g.fallback.publishFreed(serverId);
  if (g.ledger === g.fallback) return;
  const p = bounded(g, 'publishFreed', () => g.ledger.publishFreed(serverId)).catch((e: unknown) => {
    const fields = { ledger: g.ledger.kind, serverId, err: (e as Error)?.message };
    const msg = `quota ledger (${g.ledger.kind}) could not publish a confirmed deletion: other holders see the freed quota at their next read`;
    // harmless (the others read Nova's usage anyway) and expected during an outage: debug level
    g.log.debug(fields, msg);
  });
  g.pending.add(p);
  void p.finally(() => g.pending.delete(p));
}

/** At `close()`: wait for the background ledger calls ({@link publishFreed}, each bounded); the guard no longer counts the ledger's outages. */
export async function closeLedgerUse(g: GuardState): Promise<void> {
  await Promise.allSettled([...g.pending]);
  g.offDegraded?.();
}

/** Listen for freed quota on the guard's ledger and its fallback; returns the unsubscribe function. */
export function onFreed(g: GuardState, listener: () => void): () => void {
  const offs: Array<() => void> = [g.fallback.onFreed(listener)];
  if (g.ledger !== g.fallback) {
    try {
      offs.push(g.ledger.onFreed(listener));
    } catch (e) {
      noteFallback(g, g.ledger, 'onFreed', e);
    }
  }
  return () => {
    for (const off of offs) off();
  };
}

/** `claim`, admitted on the fallback, is re-claimed on the guard's ledger when it answers again ({@link reclaimDegraded}). */
export function holdDegraded(g: GuardState, claim: Claim): void {
  claim.degraded = true;
  g.offDegraded ??= g.res.onRecovered(() => reclaimDegraded(g));
}

/**
 * The ledger answers again (the end of an outage, or its first answer to this process): each
 * degraded claim of this guard still held is taken again on the guard's ledger with `claimAnyway`
 * (same needs), bound to its server when known, and its fallback claim released, so the other
 * hosts subtract it. In the background; a failure leaves the claim on the fallback.
 */
export function reclaimDegraded(g: GuardState): void {
  for (const claim of [...g.claims]) {
    if (!claim.degraded || claim.ended || claim.ledger !== g.fallback) continue;
    const old = claim.lc;
    claim.degraded = false;
    const sentAt = g.clock.now();
    bounded(g, 'claimAnyway', () => g.ledger.claimAnyway(claim.needs, g.opts.leaseTtlMs)).then(
      (lc) => {
        if (claim.ended) {
          inBackground(g, g.ledger, 'release', () => g.ledger.release(lc, 'not-created'));
          return;
        }
        claim.lc = lc;
        claim.ledger = g.ledger;
        claim.leaseFromMs = sentAt;
        const serverId = claim.serverId;
        if (serverId !== undefined) inBackground(g, g.ledger, 'bind', () => g.ledger.bind(lc, serverId));
        void g.fallback.release(old, 'not-created');
      },
      (e: unknown) => g.log.debug({ claimId: old.id, err: (e as Error)?.message }, 'could not re-claim a degraded claim on the ledger: it stays on the in-process ledger'),
    );
  }
}

/** The metadata every POST of a claim carries: the call's tag, the claim's id, token and holder. */
export function claimMetadata(tagKey: string, tag: string, lc: LedgerClaim): Record<string, string> {
  return {
    [tagKey]: tag,
    [CLAIM_ID_KEY]: lc.id.slice(0, METADATA_VALUE_MAX),
    [CLAIM_TOKEN_KEY]: String(lc.token),
    [CLAIM_HOLDER_KEY]: lc.holder.slice(0, METADATA_VALUE_MAX),
  };
}
