/**
 * The lease of a claim: renewed right before the POST (the fencing rule: no POST on a lost lease),
 * long enough to cover the POST in flight, then every `leaseTtlMs / 3` until the claim ends.
 *
 * - Right before the POST, every time: renewed for {@link postLeaseMs}: at least the client's
 *   `requestTimeoutMs` plus the ledger's time budget, so the lease cannot lapse while the POST is in
 *   flight even when the ledger cannot be reached then. This renewal is the fencing point of the
 *   port (`src/ledger/port.ts`): it marks the claim *posting*, so a store that lost its state (Redis
 *   restarted empty) gets it back from its holder, while a claim only admitted is not restored and
 *   its renewal answers `false`: no POST, back to admission. (It used to be skipped for a claim
 *   taken in the same instant; a POST without it would not be marked.)
 * - While the create is in flight: renewed every `leaseTtlMs / 3`, for `leaseTtlMs` or what is left
 *   of the POST's cover, whichever is longer. A failed renewal is retried at the next tick.
 * - A renewal that finds the lease LOST while the create is in flight (the POST was sent, Nova does
 *   not count the server yet): the claim is re-taken at once with `claimAnyway` (same needs), bound
 *   to the server once known, counted in `stats.unfencedCreates`, and a warning is logged once. The
 *   server's metadata still names the first claim.
 *
 * @module
 */
import type { Clock } from '../core/clock.js';
import { throwIfAborted } from '../errors/index.js';
import { releaseClaim } from './ledgerUse.js';
import { longestLeaseMs, warnOnce, type Claim, type GuardState } from './state.js';
import type { CallLedger } from './callLedger.js';

/**
 * The lease the renewal right before a POST asks for, in ms: `leaseTtlMs`, or the client's
 * `requestTimeoutMs` plus the ledger's time budget when longer (a request time limit that is not
 * finite leaves `leaseTtlMs`: the renewals every `leaseTtlMs / 3` cover the POST then).
 */
export function postLeaseMs(g: GuardState): number {
  return longestLeaseMs(g.client, g.opts, g.res);
}

/**
 * Renew the claim's lease right before a POST (the fencing rule: no POST on a lost lease), for
 * {@link postLeaseMs}, every time: the renewal marks the claim posting (see the module
 * description). `false` when the lease is lost (expired, or only admitted when the store lost its
 * state), or when the ledger failed (the claim is then released and the call moves to the fallback
 * ledger): either way the claim is released and the call goes back to admission.
 */
export async function renewBeforePost(g: GuardState, callLedger: CallLedger, claim: Claim, signal?: AbortSignal): Promise<boolean> {
  const coverMs = postLeaseMs(g);
  let ok: boolean;
  const sentAt = g.clock.now();
  try {
    ok = await g.res.boundedOn(claim.ledger, 'renew', () => claim.ledger.renew(claim.lc, coverMs), signal);
  } catch (e) {
    if (signal?.aborted) {
      await releaseClaim(g, claim, 'not-created');
      throwIfAborted(signal);
    }
    g.res.noteFallback(claim.ledger, 'renew', e);
    // Back to the ledger at the next admission, after a backoff step (`Admission.claim`): a ledger
    // that admits but cannot renew loops admit-renew-fail with a wait, until maxWaitMs.
    callLedger.moveToFallback();
    ok = false;
  }
  if (!ok) {
    g.log.warn({ claimId: claim.lc.id, fencingToken: claim.lc.token, ledger: claim.ledger.kind }, 'claim lost before POST /servers: not posting, back to admission');
    await releaseClaim(g, claim, 'not-created');
    return false;
  }
  claim.leaseFromMs = sentAt;
  claim.coverUntilMs = sentAt + coverMs;
  return true;
}

/** The lease a renewal asks for now: `leaseTtlMs`, or what is left of the POST's cover when longer. */
function renewalMs(g: GuardState, claim: Claim): number {
  return Math.max(g.opts.leaseTtlMs, Math.ceil(claim.coverUntilMs - g.clock.now()));
}

/** Renew the claim's lease; `false` only when the ledger says it is lost (a failure is logged and counts as kept). */
export async function renewQuietly(g: GuardState, claim: Claim): Promise<boolean> {
  const sentAt = g.clock.now();
  try {
    const ok = await g.res.boundedOn(claim.ledger, 'renew', () => claim.ledger.renew(claim.lc, renewalMs(g, claim)));
    if (ok) claim.leaseFromMs = sentAt;
    return ok;
  } catch (e) {
    warnOnce(g, 'ledger-renew', { ledger: claim.ledger.kind, claimId: claim.lc.id, err: (e as Error)?.message }, 'quota ledger could not renew a claim: trying again');
    return true;
  }
}

/**
 * The lease of `claim` was lost while its create is in flight: take a claim without a check
 * (`claimAnyway`, same needs) on the same ledger, bind it to the server once known, count
 * `stats.unfencedCreates`, warn once. `false` when the ledger failed too (logged; the create goes
 * on unclaimed, Nova's check stays the authority).
 */
async function reclaimUnfenced(g: GuardState, claim: Claim): Promise<boolean> {
  const lost = claim.lc;
  const sentAt = g.clock.now();
  try {
    const lc = await g.res.boundedOn(claim.ledger, 'claimAnyway', () => claim.ledger.claimAnyway(claim.needs, renewalMs(g, claim)));
    if (claim.ended) {
      await g.res.boundedOn(claim.ledger, 'release', () => claim.ledger.release(lc, 'not-created'));
      return false;
    }
    claim.lc = lc;
    claim.leaseFromMs = sentAt;
    if (claim.serverId !== undefined) {
      const serverId = claim.serverId;
      void g.res.boundedOn(claim.ledger, 'bind', () => claim.ledger.bind(lc, serverId)).catch(() => undefined);
    }
  } catch (e) {
    g.log.warn({ claimId: lost.id, err: (e as Error)?.message }, 'claim lease lost while its create was in flight, and the ledger failed to re-claim it');
    return false;
  }
  g.stats.unfencedCreates++;
  warnOnce(
    g,
    'lease-lost-in-flight',
    { lostClaimId: lost.id, lostToken: lost.token, claimId: claim.lc.id, fencingToken: claim.lc.token, serverId: claim.serverId },
    'claim lease lost while its create was in flight: re-claimed unfenced',
  );
  return true;
}

/**
 * Renew the claim's lease every `leaseTtlMs / 3` until it ends. A lease found lost is re-taken
 * unfenced (see the module description); a failed renewal is retried at the next tick.
 */
export function keepLease(g: GuardState, claim: Claim): void {
  if (claim.stopRenewal || claim.ended) return;
  const everyMs = Math.floor(g.opts.leaseTtlMs / 3);
  let timer: ReturnType<Clock['setTimeout']> | undefined;
  let stopped = false;
  const tick = async (): Promise<void> => {
    const ok = (await renewQuietly(g, claim)) || (!stopped && !claim.ended && (await reclaimUnfenced(g, claim)));
    if (stopped) return;
    if (!ok) return;
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
