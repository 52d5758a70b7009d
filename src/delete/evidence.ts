/**
 * Where "gone" is decided: the watcher's rules of evidence, in one place. Every end of a wait as
 * `deleted` (and every confirmation in the client's ledger of unconfirmed deletions) comes from one
 * of the two judgements below; nothing else in the watcher takes a server for gone.
 *
 * 1. **Nova's 404 for the server's own request** ({@link judgeNotFound}): `GET /servers/{id}` (or its
 *    DELETE) answered Nova's `itemNotFound` naming this very server (`lookById` in `observe.ts`; a
 *    proxy's 404, a wrong endpoint or a garbled body is a failed look, never this). It is checked
 *    against a brief listing first when it contradicts what the watcher knows ({@link needsCheck}):
 *    a listing that still shows the server means an orphaned mapping (not gone, the server stays
 *    unconfirmed), and a check that fails (the listing failed) proves nothing: looked at again.
 * 2. **Absence from a brief listing that had it** ({@link absenceIsGone}): `GET /servers` lists a
 *    server until Nova destroys it (its `DELETED` window included; at microversion 2.69 or later the
 *    servers of an unreachable cell too). A server such a listing showed before and no longer shows is
 *    gone (the earlier listing may be one the engine sent before the wait began: its latest plausible
 *    brief listing; deletion is monotonic), provided the listing succeeded in full (every page, within its time limit: a truncated,
 *    failed or hung listing is a failed listing and answers nothing), is plausibly this project's
 *    ({@link plausiblyOurs}), is not dated (`Date`) more than a second before a brief listing already
 *    taken (a cache's stored copy may predate the server; `ListingPolicy.stale`), and Nova accepted
 *    the 2.69 microversion.
 *
 * Never evidence of "gone": an absence from a `changes-since` listing (only "not seen": the server
 * gets its own GET), status `DELETED` (Nova frees the cores at the 404), a failed look of any kind,
 * an absence from a listing that never showed the server, a listing that shows none of the pending
 * or known servers. Source: Nova API reference ("Show Server Details", "List Servers", "List
 * Servers Detailed"), osc-lib `wait_for_delete` (the 404 is the proof).
 *
 * @module
 */
import type { GoneEvidence, TickEntry } from './types.js';

/** The words of an orphan's evidence. */
export const ORPHAN_EVIDENCE = 'Nova answered 404 (itemNotFound) for it, while a listing of the project (GET /servers) still shows it';

/** A pending server still waited for (its requests not stopped). */
export const live = (e: TickEntry): boolean => e.watches.length > 0 && !e.controller.signal.aborted;

/**
 * A 404 of the server's own GET is checked against a listing before it counts when it contradicts what
 * the watcher knows: the latest listing showed the server, or (one wait at a time, no listing at all)
 * nothing ever showed it reachable (no body, no accepted DELETE), as for an orphaned mapping whose
 * DELETE answered 404 too. A normal delete (an accepted DELETE, then the 404; a listing that dropped
 * the server; a server no listing showed while shared listings run) sends nothing more.
 */
export function needsCheck(e: TickEntry, fleet: boolean): boolean {
  return e.lastListed || (!fleet && e.anchorNovaMs === undefined && !Number.isFinite(e.statusAt));
}

/** What Nova's 404 for a server's own GET proves: `gone`, an `orphan` (still listed), or nothing yet (`unchecked`: the check failed). */
export type NotFoundVerdict = { verdict: 'gone' } | { verdict: 'orphan' } | { verdict: 'unchecked'; error: unknown };

/**
 * Judge Nova's 404 for `e`'s own GET (rule 1): `gone` at once unless {@link needsCheck}; then gone
 * only when `listedNow` (one successful brief listing) does not show it.
 */
export async function judgeNotFound(e: TickEntry, fleet: boolean, listedNow: () => Promise<ReadonlySet<string>>): Promise<NotFoundVerdict> {
  if (!needsCheck(e, fleet)) return { verdict: 'gone' };
  let ids: ReadonlySet<string>;
  try {
    ids = await listedNow();
  } catch (error) {
    return { verdict: 'unchecked', error };
  }
  if (ids.has(e.serverId)) return { verdict: 'orphan' };
  e.lastListed = false;
  return { verdict: 'gone' };
}

/**
 * True when a brief listing is plausibly this project's complete listing: it shows a server known
 * to exist, i.e. one of the servers the watcher waits for, or one an earlier plausible listing showed
 * (a server of the project nobody deletes: Nova lists a server until it destroys it). The brief
 * listing carries ids only, no `tenant_id`, so this is its check: a listing of another project (a
 * misrouted cache or proxy), an empty one, or one that drops every server listed a moment ago shows
 * none of them, and then no absence from it is trusted: each server gets its own GET instead (Nova's
 * 404 for it is the proof). An honest listing that drops them all at once (the project's last servers
 * gone together) then costs one GET each, never a wrong "deleted".
 */
export function plausiblyOurs(ids: ReadonlySet<string>, entries: readonly TickEntry[], known: ReadonlySet<string>): boolean {
  if (entries.some((e) => live(e) && ids.has(e.serverId))) return true;
  for (const id of known) if (ids.has(id)) return true;
  return false;
}

/**
 * Rule 2: `e` is gone by its absence from a successful brief listing `ids` (every page of it) that
 * is `plausible` ({@link plausiblyOurs}), when an earlier listing had it and Nova listed at 2.69 or
 * later (`trustAbsence`).
 */
export function absenceIsGone(e: TickEntry, ids: ReadonlySet<string>, plausible: boolean, trustAbsence: boolean): boolean {
  return !ids.has(e.serverId) && e.listed && plausible && trustAbsence;
}

/**
 * Rule 3, the fleet: a proof of deletion published by the project's elected watcher on another host
 * (`fleet.ts`) counts only when it names the evidence that watcher's engine judged by rule 1 or 2
 * above (`'not-found'` or `'absent'`): the same evidence, never weaker. Deletion is monotonic (a
 * destroyed server's id never comes back), so a proof stays true however late it arrives and
 * whichever epoch of the watcher published it. Anything else a publication says (a status, a
 * task_state) is a look like any other, never "gone".
 */
export function fleetProofIsGone(evidence: unknown): evidence is GoneEvidence {
  return evidence === 'not-found' || evidence === 'absent';
}
