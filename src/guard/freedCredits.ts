/**
 * What a guard knows about the servers it created, for the credit of their deletion to the kept
 * `/limits` reading (`FreedCredit`, `src/ledger/port.ts`): the claim each server was created under,
 * once the guard saw the server ACTIVE (a create that waits for ACTIVE), or, for a claim whose
 * server the guard does not wait for, released it as `'counted'` on a look that showed the server
 * past scheduling and not in ERROR (Nova counts its cores and RAM from then on, from placement or
 * from its cells; not a claim ended as `'counted'` on an abort, a time limit or a lost lease, while
 * the server may still be a build request Nova does not count; not a server that went to ERROR
 * during its build, which may count as an instance only), and the newest kept reading its
 * ledger knew stored right before the DELETE of that server was sent (`keptSeen()`, taken when the
 * client's `deleteServer` starts for it: its DELETE goes after). At Nova's 404 the guard publishes the
 * deletion with both, and the ledger checks the orders itself (`publishFreed`).
 *
 * A credit also needs Nova to have accepted a DELETE of the server sent by this client after that
 * reading was noted (its 204 / 202, `onDeleteAccepted`): the server still existed then, so the
 * reading, sent after Nova counted the server and stored before that DELETE, counted it. Nova's 404
 * to the DELETE (a server someone else deleted: a reading stored since may no longer count it), or a
 * DELETE whose answer was lost, gives no credit.
 *
 * A server the guard did not create, one whose claim ended otherwise, one whose deletion began on
 * the client before its claim was released as `'counted'` (a DELETE sent before the reading was
 * noted), or one no DELETE of which was accepted, gets no credit: its deletion makes the kept reading
 * stale, as any deletion did before (a reading that may not count it must be read again).
 *
 * Bounded: at most {@link MAX_ENTRIES} servers, and none older than {@link MAX_AGE_MS} (a ledger keeps
 * its `'counted'` records 10 minutes; an older credit would not hold anyway).
 *
 * @module
 */
import type { Clock } from '../core/clock.js';
import type { FreedCredit, QuotaLedger } from '../ledger/index.js';

/** The most servers remembered at once; the oldest goes first. */
export const MAX_ENTRIES = 10_000;
/** How long a server is remembered after its claim was counted, in ms. */
export const MAX_AGE_MS = 60 * 60_000;

interface Entry {
  readonly claimId: string;
  readonly atMs: number;
  keptSeq: number | undefined;
  deleting: boolean;
  /** Nova accepted a DELETE of the server sent after `keptSeq` was noted. */
  accepted: boolean;
}

/** The credits of one guard (see the module description). */
export class FreedCredits {
  readonly #entries = new Map<string, Entry>();
  readonly #clock: Clock;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** The guard saw `serverId` counted by Nova (ACTIVE, or past scheduling on a look: `releaseClaim`'s `seenCounted`) and released its claim `claimId` as `'counted'` on its shared ledger. */
  counted(serverId: string, claimId: string): void {
    const now = this.#clock.now();
    this.#prune(now);
    this.#entries.delete(serverId);
    this.#entries.set(serverId, { claimId, atMs: now, keptSeq: undefined, deleting: false, accepted: false });
  }

  /**
   * A `deleteServer` for `serverId` starts: its DELETE is sent after this. Notes `ledger.keptSeen()`
   * now (a ledger that throws gives no credit). Only the first start counts (a later call's DELETE
   * is not the first). `first` false (a deletion of the server was already pending on the client
   * when the guard first heard of one: a DELETE may have gone before the reading noted now): no credit.
   */
  deleting(serverId: string, ledger: QuotaLedger, first = true): void {
    const e = this.#entries.get(serverId);
    if (e === undefined || e.deleting) return;
    e.deleting = true;
    if (!first) return;
    try {
      e.keptSeq = ledger.keptSeen();
    } catch {
      e.keptSeq = undefined;
    }
  }

  /** Nova accepted a DELETE of `serverId` sent by the client (`onDeleteAccepted`): after {@link deleting}, the credit may hold. */
  accepted(serverId: string): void {
    const e = this.#entries.get(serverId);
    if (e !== undefined && e.deleting) e.accepted = true;
  }

  /** The credit of `serverId`'s confirmed deletion, if the guard has one; forgets the server. */
  take(serverId: string): FreedCredit | undefined {
    const e = this.#entries.get(serverId);
    if (e === undefined) return undefined;
    this.#entries.delete(serverId);
    if (this.#clock.now() - e.atMs > MAX_AGE_MS || e.keptSeq === undefined || !e.accepted) return undefined;
    return { claimId: e.claimId, keptSeq: e.keptSeq };
  }

  /** How many servers are remembered (for tests). */
  get size(): number {
    return this.#entries.size;
  }

  #prune(now: number): void {
    for (const [id, e] of this.#entries) {
      if (this.#entries.size < MAX_ENTRIES && now - e.atMs <= MAX_AGE_MS) break;
      this.#entries.delete(id);
    }
  }
}
