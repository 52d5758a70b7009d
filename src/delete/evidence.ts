/**
 * Where "gone" is decided: the watcher's rules of evidence, in one place. Every end of a wait as
 * `deleted` (and every confirmation in the client's ledger of unconfirmed deletions) comes from one
 * of the judgements below; nothing else in the watcher takes a server for gone.
 *
 * 1. **Nova's 404 for the server's own request** ({@link judgeNotFound}): `GET /servers/{id}` (or its
 *    DELETE) answered Nova's `itemNotFound` naming this very server (`lookById` in `observe.ts`; a
 *    proxy's 404, a wrong endpoint or a garbled body is a failed look, never this). It is checked
 *    against a brief listing first when it contradicts what the watcher knows ({@link needsCheck}):
 *    a listing that still shows the server means an orphaned mapping (not gone, the server stays
 *    unconfirmed), and a check that fails (the listing failed) proves nothing: looked at again.
 * 2. **The fleet** ({@link fleetProofIsGone}): a proof published by the project's elected watcher on
 *    another host counts when it names rule 1's evidence (`'not-found'`), and only while the host
 *    has no reason to doubt that watcher (`fleetConsumer.ts`: a server its own look found alive
 *    after the watcher's proof of it makes the host drop that watcher's proofs).
 *
 * **Absence is never proof.** A server missing from a brief listing (`GET /servers`) is only a
 * trigger ({@link absenceTriggers}): it gets its own GET at once (once per server, beyond its
 * normal cadence), and only that GET's 404 ends its waits. A listing is a page of whatever answered
 * the request: a proxy, a cache or a page size set in front of Nova can drop some servers and keep
 * others, cut a listing to its first page without a next link, or replay an old copy, and none of
 * that can be told from inside the answer. So no listing, however plausible, ends a wait, is
 * published as a proof to the fleet, or confirms a deletion in the ledger.
 *
 * Never evidence of "gone" either: an absence from a `changes-since` listing (only "not seen": the
 * server gets its own GET), status `DELETED` (Nova frees the cores at the 404), a failed look of any
 * kind. Source: Nova API reference ("Show Server Details", "List Servers", "List Servers Detailed"),
 * osc-lib `wait_for_delete` (the 404 is the proof). The rules, and their cost, in the project's
 * `docs/deletion-evidence.md`.
 *
 * @module
 */
import type { GoneEvidence } from './types.js';
import type { Entry } from './watch.js';

/** The words of an orphan's evidence. */
export const ORPHAN_EVIDENCE = 'Nova answered 404 (itemNotFound) for it, while a listing of the project (GET /servers) still shows it';

/** A pending server still waited for (its requests not stopped). */
export const live = (e: Entry): boolean => e.watches.length > 0 && !e.controller.signal.aborted;

/**
 * A 404 of the server's own GET is checked against a listing before it counts when it contradicts what
 * the watcher knows: the latest listing showed the server, or (one wait at a time, no listing at all)
 * nothing ever showed it reachable (no body, no accepted DELETE), as for an orphaned mapping whose
 * DELETE answered 404 too. A normal delete (an accepted DELETE, then the 404; a listing that dropped
 * the server, whose absence triggered the GET; a server no listing showed while shared listings run)
 * sends nothing more.
 */
export function needsCheck(e: Entry, shared: boolean): boolean {
  return e.lastListed || (!shared && e.anchorNovaMs === undefined && !Number.isFinite(e.statusAt));
}

/** What Nova's 404 for a server's own GET proves: `gone`, an `orphan` (still listed), or nothing yet (`unchecked`: the check failed). */
export type NotFoundVerdict = { verdict: 'gone' } | { verdict: 'orphan' } | { verdict: 'unchecked'; error: unknown };

/**
 * Judge Nova's 404 for `e`'s own GET (rule 1): `gone` at once unless {@link needsCheck}; then gone
 * only when `listedNow` (one successful brief listing) does not show it.
 */
export async function judgeNotFound(e: Entry, shared: boolean, listedNow: () => Promise<ReadonlySet<string>>): Promise<NotFoundVerdict> {
  if (!needsCheck(e, shared)) return { verdict: 'gone' };
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
 * An absence from a successful brief listing triggers its own GET now (beyond its cadence) when
 * none was triggered for it yet (`absenceLooked`). Its 404 is the proof (rule 1); the absence itself
 * proves nothing. One such GET per server and deletion: for a server really gone it is the one GET
 * whose 404 its wait needs anyway, sent now instead of at its next due look (no request more); a
 * listing that keeps dropping a live server costs one GET, then nothing more. It is sent as every
 * look is (`Tick` in `tick.ts`): while Nova is in trouble the most overdue server is probed
 * first, alone, and the others go out only when that GET was answered, so a failing Nova gets one
 * GET a tick; a Nova that is slow but answering gets the GETs its waits need without an interval's
 * delay (seen on a real Nova beside CPU hogs: holding them back until their due looks returned
 * `deleteServers` of 40 5.5 s after the last 404).
 */
export function absenceTriggers(e: Entry): boolean {
  return !e.absenceLooked;
}

/**
 * Rule 2, the fleet: a proof of deletion published by the project's elected watcher on another host
 * (`fleet.ts`) counts only when it names the evidence of rule 1 (`'not-found'`): the same evidence
 * as the host's own, never weaker. Deletion is monotonic (a destroyed server's id never comes back),
 * so a proof stays true however late it arrives and whichever epoch of the watcher published it,
 * unless the host has dropped that watcher's proofs (`fleetConsumer.ts`). `'absent'` (published by watchers before absence stopped being proof) and anything else a
 * publication says (a status, a task_state) is never "gone".
 */
export function fleetProofIsGone(evidence: unknown): evidence is GoneEvidence {
  return evidence === 'not-found';
}
