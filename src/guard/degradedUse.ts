/**
 * The guard's side of degraded mode (`degradedShare.ts`): an admission on the fallback ledger is
 * kept only within the process's share, and when the ledger answers again the degraded claims still
 * in flight are re-claimed on it (`claimAnyway`, then `bind` to their server) so the other hosts
 * subtract them.
 *
 * @module
 */
import type { ResourceAmounts } from '../core/types.js';
import { AMOUNT_FIELD, QUOTA_RESOURCES, type FitVerdict, type Headroom } from './headroom.js';
import type { LedgerClaim } from './ledger.js';
import { bounded, inBackground } from './ledgerUse.js';
import type { Claim, GuardState } from './state.js';

/**
 * An admission the fallback ledger gave (`lc`): held when it fits the process's share (or no share
 * is known), else released on the fallback and a `'short'` verdict whose headroom is what is left of
 * the share.
 */
export async function admitDegraded(g: GuardState, needs: ResourceAmounts, headroom: Headroom, lc: LedgerClaim, hold: (lc: LedgerClaim) => Claim): Promise<{ claim?: Claim; fit?: FitVerdict }> {
  const taken = g.res.share.take(needs);
  if (typeof taken === 'object') {
    await g.fallback.release(lc, 'not-created');
    const shortfalls = QUOTA_RESOURCES.filter((r) => needs[AMOUNT_FIELD[r]] > taken.allowance[AMOUNT_FIELD[r]]).map((resource) => ({
      resource,
      needed: needs[AMOUNT_FIELD[resource]],
      ...headroom[resource],
      headroom: Math.max(0, taken.allowance[AMOUNT_FIELD[resource]]),
    }));
    g.log.debug({ needs, allowance: taken.allowance }, "quota ledger out of reach: beyond this process's share of the last good reading, waiting");
    return { fit: { verdict: 'short', shortfalls } };
  }
  const claim = hold(lc);
  g.log.debug({ needs, share: g.res.share.share, episode: taken }, "quota ledger out of reach: admitted within this process's share of the last good reading");
  if (typeof taken === 'number') {
    claim.degradedEpisode = taken;
    g.offDegraded ??= g.res.share.onEnd(() => reclaimDegraded(g));
  }
  return { claim };
}

/**
 * The episode ended (the ledger answers): each degraded claim of this guard still held is taken
 * again on the guard's ledger with `claimAnyway` (same needs), bound to its server when known, and
 * its fallback claim released. In the background; a failure leaves the claim on the fallback.
 */
export function reclaimDegraded(g: GuardState): void {
  for (const claim of [...g.claims]) {
    if (claim.degradedEpisode === undefined || claim.ended || claim.ledger !== g.fallback) continue;
    const old = claim.lc;
    claim.degradedEpisode = undefined;
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
