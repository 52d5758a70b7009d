/**
 * Why a wait for quota headroom ran out: one bounded check, so a worker can tell "the fleet is busy"
 * from "Nova's books are wrong". It lists the project's servers (`GET /servers/detail` at
 * microversion 2.69 or later: flavors embedded, servers of an unreachable cell listed with status
 * `UNKNOWN`; Nova API reference, "List Servers Detailed"), sums what they hold under Nova's legacy
 * counting (`src/core/counting.ts`), and compares it with what `GET /limits` reported as used for the
 * resources that fell short (one listing shared by the checks of a client, below). The answer, in the audit's terms (see `docs/audit.md`):
 *
 * - `busy-fleet`, no finding: the listed servers hold what Nova reports; waiting, or deleting servers
 *   of the fleet, is the remedy.
 * - `wrong-books` with a finding: `stale-usage` (Nova reports more than every listed server holds),
 *   `down-cell` (the same, while servers of a cell that does not answer are listed without a size),
 *   or `stuck-deleting` (what is reported is held by servers that were being deleted since before the
 *   wait began and still are).
 *
 * Under `[quota] count_usage_from_placement` or unified limits the comparison is that of legacy
 * counting; a full audit (`auditQuota`) infers the model and names every cause.
 *
 * **One listing for the checks of a client.** The shortfall checks of every waiting call of a
 * client (option `explainShortfall`) share one project listing: without it, each waiting call listed the whole project
 * (`GET /servers/detail`, about 1.5 KB per server) on every `EXPLAIN_EVERY_WAITS`th wait, and in a
 * fleet whose quota binds all day those listings were most of the bytes Nova sent.
 *
 * The rules, per `NovaClient` (every guard of the client shares its `projectListing`):
 * - a call takes the newest listing of the client when it was sent at or after the call's `/limits`
 *   reading was answered (in flight or answered: the evidence is that of a listing of its own,
 *   which would also come after the reading);
 * - otherwise the check on a wait ({@link EXPLAIN_EVERY_WAITS}) sends a listing only when none is in
 *   flight and none was sent in the last {@link EXPLAIN_MIN_INTERVAL_MS}: else that wait goes
 *   without a check (`shortfallCause` undefined);
 * - the check of a wait that ran out (the `QuotaWaitTimeoutError`) waits for the listing in flight
 *   and sends the next, shared by every call that waits for it: at most one listing in flight per
 *   client.
 *
 * So a client sends at most one listing per `EXPLAIN_MIN_INTERVAL_MS` for the checks on waits,
 * however many calls wait, plus at most one at a time for the waits that run out.
 *
 * @module
 */
import { REMEDIES, heldByServers, isDeleting, embeddedFlavor, statusOf } from '../core/counting.js';
import type { QuotaFinding, ResourceAmounts, Server } from '../core/types.js';
import { AMOUNT_FIELD, type Shortfall } from '../ledger/index.js';
import { throwIfAborted } from '../errors/index.js';
import type { NovaClient } from '../nova/index.js';
/** `busy-fleet`: the project's servers hold the quota; `wrong-books`: Nova counts quota no live server explains (see `finding`). */
export type ShortfallCause = 'busy-fleet' | 'wrong-books';

/** The answer of the check. */
export interface ShortfallExplanation {
  cause: ShortfallCause;
  /** With `wrong-books`: the finding, shaped as the audit's. */
  finding: QuotaFinding | undefined;
}

const RESOURCES: readonly (keyof ResourceAmounts)[] = ['cores', 'ramMiB', 'instances'];

const ids = (servers: readonly Server[]): string[] => servers.map((s) => s.id);

/**
 * The check for `shortfalls` (their `used` is Nova's reading) against `servers`, a listing of the
 * project sent after that reading (below). `waitStartedWallMs`: epoch ms at which the
 * wait began (a server deleting since before it is stuck for this wait).
 */
export function explainShortfall(servers: readonly Server[], shortfalls: readonly Shortfall[], waitStartedWallMs: number): ShortfallExplanation {
  const { held, unsized } = heldByServers(servers);
  const excess = { cores: 0, ramMiB: 0, instances: 0 };
  for (const s of shortfalls) if (s.used !== undefined) excess[AMOUNT_FIELD[s.resource]] = Math.max(0, s.used - held[AMOUNT_FIELD[s.resource]]);
  if (RESOURCES.some((r) => excess[r] > 0)) {
    const parts = RESOURCES.filter((r) => excess[r] > 0).map((r) => `${r} ${excess[r]}`);
    const down = servers.filter((s) => statusOf(s) === 'UNKNOWN');
    if (unsized > 0 && down.length > 0) {
      return {
        cause: 'wrong-books',
        finding: {
          kind: 'down-cell',
          transient: false,
          needsOperator: true,
          serverIds: ids(down),
          holds: excess,
          evidence: `Nova reports more than the listed servers hold (${parts.join(', ')}), and ${down.length} listed server(s) have status UNKNOWN: a cell does not answer, their sizes are unknown`,
          ...REMEDIES['down-cell'],
        },
      };
    }
    return {
      cause: 'wrong-books',
      finding: {
        kind: 'stale-usage',
        transient: false,
        needsOperator: true,
        serverIds: [],
        holds: excess,
        evidence: `Nova reports more than every listed server holds under legacy counting (${parts.join(', ')}): usage with no server behind it`,
        ...REMEDIES['stale-usage'],
      },
    };
  }
  const stuck = servers.filter((s) => {
    const updated = Date.parse(String(s.updated ?? ''));
    return isDeleting(s) && Number.isFinite(updated) && updated <= waitStartedWallMs;
  });
  if (stuck.length > 0) {
    const holds = { cores: 0, ramMiB: 0, instances: stuck.length };
    for (const s of stuck) {
      const f = embeddedFlavor(s);
      holds.cores += f?.vcpus ?? 0;
      holds.ramMiB += f?.ram ?? 0;
    }
    return {
      cause: 'wrong-books',
      finding: {
        kind: 'stuck-deleting',
        transient: false,
        needsOperator: true,
        serverIds: ids(stuck),
        holds,
        evidence: `${stuck.length} server(s) have been deleting since before the wait began and still hold quota (${stuck.map((s) => `${s.id} ${statusOf(s)}`).join(', ')})`,
        ...REMEDIES['stuck-deleting'],
      },
    };
  }
  return { cause: 'busy-fleet', finding: undefined };
}

/** The least time between two listings of one client for the checks on waits, in ms. */
export const EXPLAIN_MIN_INTERVAL_MS = 60_000;

/** `p`, or a rejection with `signal.reason` as soon as `signal` aborts (`p` goes on for the others). */
async function orAbort<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  throwIfAborted(signal);
  let off = (): void => undefined;
  const aborted = new Promise<never>((_resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    off = () => signal.removeEventListener('abort', onAbort);
  });
  try {
    return await Promise.race([p, aborted]);
  } finally {
    off();
  }
}

/**
 * The project's servers for a shortfall check of a reading answered at `readAtMs` (the client's
 * clock), by the rules of the module description; `undefined` when a check on a wait goes
 * without (`final` false).
 * @throws the listing's errors; {@link AbortError} when `signal` aborts.
 */
export async function serversForCheck(client: NovaClient, readAtMs: number, final: boolean, signal: AbortSignal | undefined): Promise<readonly Server[] | undefined> {
  for (;;) {
    const l = client.projectListing.newest();
    if (l && l.sentAtMs >= readAtMs) return orAbort(l.servers, signal);
    if (l && !l.settled) {
      if (!final) return undefined;
      await orAbort(
        l.servers.catch(() => undefined),
        signal,
      );
      continue;
    }
    if (!final && l && client.clock.now() - l.sentAtMs < EXPLAIN_MIN_INTERVAL_MS) return undefined;
    client.projectListing.send();
  }
}
