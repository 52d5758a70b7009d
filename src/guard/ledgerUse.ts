/**
 * The guard's claims (see `src/ledger/port.ts`): a claim held on the ledger it came from, ended
 * there (`release`) and noted there (`bind`), in the background through the guard's degraded mode
 * (`degradedLedger.ts`: every call of the ledger bounded, cleanup that failed sent again when an
 * outage ends); the claims admitted on the fallback in degraded mode, re-claimed on the ledger when it
 * answers ({@link reclaimDegraded}); and the metadata that tags what a claim creates.
 *
 * A claim is always released on the ledger it came from. A ledger call that fails moves the guarded
 * call to the fallback (its `CallLedger`, `callLedger.ts`); the next admission starts on the guard's
 * ledger again, so a ledger that comes back is used again, and a ledger known down is skipped at
 * once until a probe finds it back.
 *
 * @module
 */
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

/**
 * Hold `lc` (from `ledger`) as one of the guard's claims. `sentAtMs`: when the call that took it
 * was sent, on the guard's clock (the lease runs from then at the latest); default now.
 */
export function holdClaim(g: GuardState, lc: LedgerClaim, ledger: QuotaLedger, sentAtMs: number = g.clock.now()): Claim {
  const now = g.clock.now();
  const claim: Claim = { lc, ledger, needs: lc.needs, flavorNeeds: false, readingStamp: undefined, claimedAtMs: now, leaseFromMs: Math.min(sentAtMs, now), coverUntilMs: 0, degraded: false, serverId: undefined, unwatched: false, ended: false, stopRenewal: undefined, look: { running: undefined, endedAtMs: undefined } };
  g.claims.add(claim);
  return claim;
}

/**
 * End a claim on the ledger it came from (idempotent). The release is sent at once and runs in the
 * background, bounded by `ledgerTimeoutMs` (a hung ledger never delays the guarded call); a failure
 * is logged and the claim's lease, no longer renewed, expires within `leaseTtlMs`.
 *
 * `seenCounted`: a look just showed the server past scheduling (`isPastScheduling`: Nova counts it
 * from now on). Only then may its deletion be credited to a kept reading sent after this release
 * (`freedCredits.ts`); a claim ended as `'counted'` for another reason (an abort keeping the server,
 * a time limit, a lease lost, a create whose fate is unknown) may end while the server is still a
 * build request Nova does not count, and a reading sent then never counted it. A claim whose needs
 * are not its flavor's (`Claim.flavorNeeds`) is never credited either.
 */
export async function releaseClaim(g: GuardState, claim: Claim, end: 'not-created' | 'counted', seenCounted = false): Promise<void> {
  if (claim.ended) return;
  claim.ended = true;
  claim.stopRenewal?.();
  g.claims.delete(claim);
  // Deleted again by the guard (or never made): no longer this process's (the share rule, `degradedShare.ts`).
  if (end === 'not-created' && claim.serverId !== undefined) g.res.share.freed(claim.serverId);
  // Nova surely counts the server: its deletion may be credited to a kept reading sent after this release.
  if (end === 'counted' && seenCounted) noteCounted(g, claim);
  g.res.inBackground(claim.ledger, 'release', () => claim.ledger.release(claim.lc, end), (e) =>
    warnOnce(g, 'ledger-release', { ledger: claim.ledger.kind, claimId: claim.lc.id, err: (e as Error)?.message }, 'quota ledger could not release a claim: its lease expires instead'),
  );
}

/**
 * Nova surely counts the server of `claim` (ended as `'counted'`): remember it for the credit of its
 * deletion (`freedCredits.ts`), when the claim's needs are its flavor's and it is on the guard's own
 * ledger (not a degraded claim).
 */
export function noteCounted(g: GuardState, claim: Claim): void {
  if (claim.flavorNeeds && claim.serverId !== undefined && !claim.degraded && claim.ledger === g.res.ledger) g.credits.counted(claim.serverId, claim.lc.id);
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
  g.res.inBackground(claim.ledger, 'bind', () => shrink().then(() => claim.ledger.bind(lc, serverId)), (e) =>
    warnOnce(g, 'ledger-bind', { ledger: claim.ledger.kind, claimId: claim.lc.id, err: (e as Error)?.message }, 'quota ledger could not note the created server'),
  );
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
    g.res.bounded('claimAnyway', () => g.ledger.claimAnyway(claim.needs, g.opts.leaseTtlMs)).then(
      (lc) => {
        if (claim.ended) {
          g.res.inBackground(g.ledger, 'release', () => g.ledger.release(lc, 'not-created'));
          return;
        }
        claim.lc = lc;
        claim.ledger = g.ledger;
        claim.leaseFromMs = sentAt;
        const serverId = claim.serverId;
        if (serverId !== undefined) g.res.inBackground(g.ledger, 'bind', () => g.ledger.bind(lc, serverId));
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
