/**
 * Why a wait for quota headroom ran out: one bounded check, so a worker can tell "the fleet is busy"
 * from "Nova's books are wrong". It lists the project's servers (`GET /servers/detail` at
 * microversion 2.69 or later: flavors embedded, servers of an unreachable cell listed with status
 * `UNKNOWN`; Nova API reference, "List Servers Detailed"), sums what they hold under Nova's legacy
 * counting (`src/core/counting.ts`), and compares it with what `GET /limits` reported as used for the
 * resources that fell short (one listing shared by the checks of a client: `explainShare.ts`). The answer, in the audit's terms (see `docs/audit.md`):
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
 * @module
 */
import { REMEDIES, heldByServers, isDeleting, embeddedFlavor, statusOf } from '../core/counting.js';
import type { QuotaFinding, ResourceAmounts, Server } from '../core/types.js';
import { AMOUNT_FIELD, type Shortfall } from '../ledger/index.js';

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
 * project sent after that reading (`explainShare.ts`). `waitStartedWallMs`: epoch ms at which the
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
