/**
 * Degraded mode: what an admission on the fallback ledger is worth while the guard's ledger is out
 * of reach, and what happens to it when the ledger answers again.
 *
 * - A process whose admissions the ledger has answered before, or whose ledger says it has reached
 *   its store (`ResilientLedger.hadGoodReading`, `QuotaLedger.everReached`), takes part in the
 *   fleet's accounting: the other hosts may still be admitting on the ledger, and this process
 *   cannot tell "the ledger is down for everyone" from "my call failed". A call that a ledger
 *   failure moved to the fallback (or that finds the ledger known down) admits nothing on the
 *   fallback: it waits, as when short, and goes back to the ledger at its next admission (a ledger
 *   known down is probed then). An outage costs speed (creates wait, up to `maxWaitMs`), never quota.
 * - A process whose ledger never reached its store (absent or out of reach from the start) works on
 *   its own as without a ledger: the fallback's claims and Nova's check, once its calls have been
 *   failing for `NEVER_REACHED_WAIT_MS` (3 s: a store that was restarting as the process started is
 *   back by then, and the process then joins the fleet's accounting instead of going alone beside
 *   it). Its claims admitted on the
 *   fallback are re-claimed on the ledger (`claimAnyway`, then `bind` to their server) once it
 *   answers (the end of an outage, or the first admission on it), so the other hosts subtract them.
 * - A call that lost its leases past `maxWaitMs` and stays on the fallback for good (no admission
 *   loop without a wait, `Admission.claim`) admits there as before, unless the ledger is known down.
 *
 * @module
 */
import type { ResourceAmounts } from '../core/types.js';
import { AMOUNT_FIELD, QUOTA_RESOURCES, type FitVerdict, type Headroom } from '../ledger/index.js';
import { bounded, inBackground } from './ledgerUse.js';
import type { Claim, GuardState } from './state.js';

/**
 * True when an admission on the fallback must wait for the guard's ledger instead (see the module
 * description). `fallbackForOutage`: the call is on the fallback because a ledger call failed.
 */
export function waitsForLedger(g: GuardState, fallbackForOutage: boolean): boolean {
  if (!fallbackForOutage && !g.res.down) return false;
  return g.res.hadGoodReading || g.res.mayReachSoon;
}

/**
 * The verdict of an admission that waits for the ledger ({@link waitsForLedger}; the fallback's
 * claim is already given back): `'short'`, with headroom 0 for what the call needs.
 */
export function outOfReachFit(g: GuardState, needs: ResourceAmounts, headroom: Headroom): FitVerdict {
  const wanted = QUOTA_RESOURCES.filter((r) => needs[AMOUNT_FIELD[r]] > 0);
  const shortfalls = (wanted.length > 0 ? wanted : QUOTA_RESOURCES).map((resource) => ({ resource, needed: needs[AMOUNT_FIELD[resource]], ...headroom[resource], headroom: 0 }));
  g.log.debug(
    { needs, ledger: g.ledger.kind },
    g.res.hadGoodReading
      ? 'quota ledger out of reach: waiting for it (it has answered this process before: other hosts may still admit on it)'
      : 'quota ledger out of reach: waiting for it (never answered this process yet: it may be back soon, e.g. a Redis restarting)',
  );
  return { verdict: 'short', shortfalls };
}

/** `claim`, admitted on the fallback in degraded mode, is re-claimed on the guard's ledger when it answers again ({@link reclaimDegraded}). */
export function holdDegraded(g: GuardState, claim: Claim): void {
  claim.degraded = true;
  g.offDegraded ??= g.res.onRecovered(() => reclaimDegraded(g));
}

/**
 * The ledger answers again: each degraded claim of this guard still held is taken again on the
 * guard's ledger with `claimAnyway` (same needs), bound to its server when known, and its fallback
 * claim released. In the background; a failure leaves the claim on the fallback.
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
