/**
 * The guard's side of the {@link QuotaLedger} protocol (see `ledger.ts`): every call of the ledger
 * bounded in time, the fallback to a private in-process ledger, claims and their leases, and the
 * metadata that tags what a claim creates.
 *
 * Fallback (Nova stays the authority): when a call of the guard's ledger rejects or runs past
 * `ledgerTimeoutMs`, the guard warns once (then logs at debug level), counts
 * `stats.ledgerFallbacks`, and the guarded call goes on with the guard's private
 * `InProcessQuotaLedger` (its claims and queue cover this guard's calls only; Nova's quota 403 path
 * covers the rest). A claim is always released on the ledger it came from. The next guarded call
 * starts on the guard's ledger again, so a ledger that comes back is used again.
 *
 * @module
 */
import pTimeout from 'p-timeout';
import { pTimeoutTimers, type Clock } from '../core/clock.js';
import type { AbsoluteLimits, ResourceAmounts } from '../core/types.js';
import { AbortError, throwIfAborted } from '../errors/index.js';
import type { LedgerClaim, LedgerLimits, LedgerPlace, QuotaLedger } from './ledger.js';
import { remainingMs, warnOnce, type Claim, type GuardState, type GuardedCall } from './state.js';

/** Metadata key of the claim's id on every server the guard creates. */
export const CLAIM_ID_KEY = 'nova-guard-claim-id';
/** Metadata key of the claim's fencing token. */
export const CLAIM_TOKEN_KEY = 'nova-guard-token';
/** Metadata key of the claim's holder (host and process by default). */
export const CLAIM_HOLDER_KEY = 'nova-guard-holder';
/** Longest metadata value Nova takes (Nova API reference, "Create Server": `metadata`). */
const METADATA_VALUE_MAX = 255;

/**
 * The time limit of one ledger call of `call`'s wait, in ms: `ledgerTimeoutMs`, or less while the
 * call's `maxWaitMs` is running and closer (a hung ledger never stretches the wait past
 * `maxWaitMs`). Once `maxWaitMs` is spent (or without a call): `ledgerTimeoutMs`.
 */
export function ledgerLimitMs(g: GuardState, call: GuardedCall | undefined): number {
  const remaining = call === undefined ? Number.POSITIVE_INFINITY : remainingMs(g, call);
  return remaining > 0 ? Math.min(g.opts.ledgerTimeoutMs, Math.ceil(remaining)) : g.opts.ledgerTimeoutMs;
}

/**
 * `work()` bounded on the guard's clock by `limitMs` (default `ledgerTimeoutMs`) and by `signal`;
 * a synchronous throw becomes a rejection.
 * @throws {@link AbortError} when `signal` aborts first (the ledger call is abandoned, not undone).
 */
export async function bounded<T>(g: GuardState, what: string, work: () => Promise<T>, signal?: AbortSignal, limitMs: number = g.opts.ledgerTimeoutMs): Promise<T> {
  throwIfAborted(signal);
  let p: Promise<T>;
  try {
    p = work();
  } catch (e) {
    p = Promise.reject(e);
  }
  try {
    return await pTimeout(p, { milliseconds: limitMs, signal, customTimers: pTimeoutTimers(g.clock), message: `ledger ${what} took longer than ${limitMs} ms` });
  } catch (e) {
    throwIfAborted(signal);
    throw e;
  }
}

/**
 * Cleanup on a ledger (`leave`, `release`) that must not hold up the guarded call: run now, in the
 * background, bounded by `ledgerTimeoutMs` and never by the caller's signal (an aborted call still
 * leaves and releases). A failure goes to `onError`; what is not undone expires by its lease
 * (`leaseTtlMs` for a claim, the ledger's place lease for a place). Never sends a Nova request.
 */
function inBackground(g: GuardState, ledger: QuotaLedger, what: string, work: () => Promise<void>, onError: (e: unknown) => void = () => undefined): void {
  boundedUnlessFallback(g, ledger, what, work).catch(onError);
}

/**
 * `work()` on `ledger`: {@link bounded} for the guard's ledger; run as it is on the guard's own
 * fallback (in-process, never hangs). A synchronous throw becomes a rejection either way.
 */
function boundedUnlessFallback<T>(g: GuardState, ledger: QuotaLedger, what: string, work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  if (ledger !== g.fallback) return bounded(g, what, work, signal);
  try {
    return work();
  } catch (e) {
    return Promise.reject(e);
  }
}

/** Note a failed call of `ledger`: one warning, a counter. */
function noteFallback(g: GuardState, ledger: QuotaLedger, what: string, e: unknown): void {
  g.stats.ledgerFallbacks++;
  warnOnce(
    g,
    'ledger-fallback',
    { ledger: ledger.kind, call: what, err: (e as Error)?.message },
    `quota ledger (${ledger.kind}) failed: going on with the in-process ledger, Nova's quota check decides the rest`,
  );
}

/**
 * Run `op` on the call's ledger, bounded; when it fails, the call moves to the fallback ledger
 * (leaving its place on the other, best effort) and `op` runs there. Resolves the result and the
 * ledger that gave it.
 */
export async function onLedger<T>(
  g: GuardState,
  call: GuardedCall | undefined,
  what: string,
  op: (l: QuotaLedger) => Promise<T>,
  undo?: (l: QuotaLedger, late: T) => Promise<void>,
  signal?: AbortSignal,
): Promise<{ value: T; ledger: QuotaLedger }> {
  const ledger = call?.ledger ?? g.ledger;
  if (ledger === g.fallback) return { value: await op(ledger), ledger };
  let pending: Promise<T> | undefined;
  try {
    return { value: await bounded(g, what, () => (pending = op(ledger)), signal, ledgerLimitMs(g, call)), ledger };
  } catch (e) {
    // A call that answers after its time limit (or after the abort): undo what it took (a claim, a place), best effort.
    if (undo && pending) pending.then((late) => inBackground(g, ledger, `undo ${what}`, () => undo(ledger, late))).catch(() => undefined);
    throwIfAborted(signal);
    noteFallback(g, ledger, what, e);
    if (call) moveToFallback(g, call);
    return { value: await op(g.fallback), ledger: g.fallback };
  }
}

/** The call goes on with the fallback ledger (leaving its place on the other, best effort). */
export function moveToFallback(g: GuardState, call: GuardedCall): void {
  call.ledger = g.fallback;
  const place = call.place;
  call.place = undefined;
  if (place && place.ledger !== g.fallback) inBackground(g, place.ledger, 'leave', () => place.ledger.leave(place.place));
}

/** Leave `held` (a place of the call) in the background: see {@link inBackground}. */
export function leaveInBackground(g: GuardState, held: { ledger: QuotaLedger; place: LedgerPlace }): void {
  inBackground(g, held.ledger, 'leave', () => held.ledger.leave(held.place));
}

/**
 * A `/limits` reading through the call's ledger. The time limit ({@link ledgerLimitMs}) counts the
 * ledger's own work, not the time Nova takes to answer `read`; an error of `read` itself (Nova's)
 * is thrown as it is, never taken for a ledger failure. `signal` aborting ends the wait at once.
 *
 * The `read` the ledger gets is gated: once this function has settled (the reading came, the
 * ledger was abandoned for the fallback, or the call aborted), a late `read` by the abandoned
 * ledger call is refused with an {@link AbortError} before any request: no `GET /limits` ever
 * reaches Nova for a call that has settled.
 */
export async function readThroughLedger(
  g: GuardState,
  call: GuardedCall | undefined,
  read: (signal: AbortSignal | undefined) => Promise<{ absolute: AbsoluteLimits; requestId: string | undefined }>,
  signal: AbortSignal | undefined,
): Promise<{ reading: LedgerLimits; ledger: QuotaLedger }> {
  const ledger = call?.ledger ?? g.ledger;
  let readFailure: { error: unknown } | undefined;
  const ownRead = async (s: AbortSignal | undefined): Promise<{ absolute: AbsoluteLimits; requestId: string | undefined }> => {
    try {
      return await read(s);
    } catch (e) {
      readFailure = { error: e };
      throw e;
    }
  };
  if (ledger === g.fallback) return { reading: await ledger.limits(ownRead, signal), ledger };
  throwIfAborted(signal);
  const gate = new AbortController();
  const late = new AbortController();
  const onAbort = (): void => late.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  let timer: ReturnType<Clock['setTimeout']> | undefined;
  const arm = (): void => {
    g.clock.clearTimeout(timer);
    const ms = ledgerLimitMs(g, call);
    timer = g.clock.setTimeout(() => late.abort(new Error(`ledger limits took longer than ${ms} ms`)), ms);
  };
  const timedRead = async (s: AbortSignal | undefined): Promise<{ absolute: AbsoluteLimits; requestId: string | undefined }> => {
    if (gate.signal.aborted) throw new AbortError('the ledger call was abandoned: no GET /limits for it', { cause: gate.signal.reason });
    g.clock.clearTimeout(timer);
    try {
      return await ownRead(s === undefined ? gate.signal : AbortSignal.any([s, gate.signal]));
    } finally {
      if (!gate.signal.aborted) arm();
    }
  };
  arm();
  try {
    let p: Promise<LedgerLimits>;
    try {
      p = ledger.limits(timedRead, signal === undefined ? gate.signal : AbortSignal.any([signal, gate.signal]));
    } catch (e) {
      p = Promise.reject(e);
    }
    // p-timeout without its own limit: the limit is `late`, paused while Nova answers.
    return { reading: await pTimeout(p, { milliseconds: Number.POSITIVE_INFINITY, signal: late.signal }), ledger };
  } catch (e) {
    if (readFailure) throw readFailure.error;
    throwIfAborted(signal);
    gate.abort(new Error('abandoned for the fallback ledger'));
    noteFallback(g, ledger, 'limits', e);
    if (call) moveToFallback(g, call);
    return { reading: await g.fallback.limits(ownRead, signal), ledger: g.fallback };
  } finally {
    gate.abort(new Error('the guarded call is past this reading'));
    g.clock.clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
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

/** Hold `lc` (from `ledger`) as one of the guard's claims. */
export function holdClaim(g: GuardState, lc: LedgerClaim, ledger: QuotaLedger): Claim {
  const claim: Claim = { lc, ledger, needs: lc.needs, claimedAtMs: g.clock.now(), serverId: undefined, unwatched: false, ended: false, stopRenewal: undefined };
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
  inBackground(g, claim.ledger, 'bind', () => claim.ledger.bind(claim.lc, serverId), (e) =>
    warnOnce(g, 'ledger-bind', { ledger: claim.ledger.kind, claimId: claim.lc.id, err: (e as Error)?.message }, 'quota ledger could not note the created server'),
  );
}

/**
 * Renew the claim's lease right before a POST (the fencing rule: no POST on a lost lease). `false`
 * when the lease is lost, or when the ledger failed (the claim is then released and the call moves
 * to the fallback ledger): either way the call goes back to admission.
 */
export async function renewBeforePost(g: GuardState, call: GuardedCall, claim: Claim, signal?: AbortSignal): Promise<boolean> {
  let ok: boolean;
  try {
    ok = await boundedUnlessFallback(g, claim.ledger, 'renew', () => claim.ledger.renew(claim.lc, g.opts.leaseTtlMs), signal);
  } catch (e) {
    if (signal?.aborted) {
      await releaseClaim(g, claim, 'not-created');
      throwIfAborted(signal);
    }
    noteFallback(g, claim.ledger, 'renew', e);
    moveToFallback(g, call);
    ok = false;
  }
  if (!ok) {
    g.log.warn({ claimId: claim.lc.id, fencingToken: claim.lc.token, ledger: claim.ledger.kind }, 'claim lost before POST /servers: not posting, back to admission');
    await releaseClaim(g, claim, 'not-created');
  }
  return ok;
}

/** Renew the claim's lease; `false` only when the ledger says it is lost (a failure is logged and counts as kept). */
export async function renewQuietly(g: GuardState, claim: Claim): Promise<boolean> {
  try {
    return await bounded(g, 'renew', () => claim.ledger.renew(claim.lc, g.opts.leaseTtlMs));
  } catch (e) {
    warnOnce(g, 'ledger-renew', { ledger: claim.ledger.kind, claimId: claim.lc.id, err: (e as Error)?.message }, 'quota ledger could not renew a claim: trying again');
    return true;
  }
}

/**
 * Renew the claim's lease every `leaseTtlMs / 3` until it ends. A lost lease is logged (the create
 * is already under way; its metadata names the claim); a failed renewal is retried at the next tick.
 */
export function keepLease(g: GuardState, claim: Claim): void {
  if (claim.stopRenewal || claim.ended) return;
  const everyMs = Math.floor(g.opts.leaseTtlMs / 3);
  let timer: ReturnType<Clock['setTimeout']> | undefined;
  let stopped = false;
  const tick = async (): Promise<void> => {
    const ok = await renewQuietly(g, claim);
    if (stopped) return;
    if (!ok) {
      g.log.warn({ claimId: claim.lc.id, fencingToken: claim.lc.token, serverId: claim.serverId }, 'claim lease lost while its create is in flight');
      return;
    }
    schedule();
  };
  const schedule = (): void => {
    timer = g.clock.setTimeout(() => void tick(), everyMs);
  };
  claim.stopRenewal = () => {
    stopped = true;
    g.clock.clearTimeout(timer);
  };
  schedule();
}

/** Tell the guard's ledger (and its fallback) that Nova confirmed a deletion. */
export function publishFreed(g: GuardState, serverId: string): void {
  void g.fallback.publishFreed(serverId);
  if (g.ledger === g.fallback) return;
  bounded(g, 'publishFreed', () => g.ledger.publishFreed(serverId)).catch((e: unknown) => noteFallback(g, g.ledger, 'publishFreed', e));
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

/** The metadata every POST of a claim carries: the call's tag, the claim's id, token and holder. */
export function claimMetadata(tagKey: string, tag: string, lc: LedgerClaim): Record<string, string> {
  return {
    [tagKey]: tag,
    [CLAIM_ID_KEY]: lc.id.slice(0, METADATA_VALUE_MAX),
    [CLAIM_TOKEN_KEY]: String(lc.token),
    [CLAIM_HOLDER_KEY]: lc.holder.slice(0, METADATA_VALUE_MAX),
  };
}
