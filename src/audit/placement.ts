/**
 * Placement's view of the project's usage (`GET /usages?project_id=`, Placement API reference,
 * "Usages"), read through a function the caller gives (the client talks to compute only), and the
 * `leaked-allocation` finding it supports: placement holds more cores or RAM for the project than its
 * listed servers can (allocations of servers that are gone), or less (allocations missing).
 *
 * @module
 */
import { AuthError, isAbortError } from '../errors/index.js';
import { zeroUsage, type Usage } from './count.js';
import type { Finding } from './findings.js';

/**
 * Reads placement's usage of a project: the `usages` object of `GET /usages?project_id=<id>`
 * (resource class → amount, e.g. `{ VCPU: 8, MEMORY_MB: 8192 }`). Placement needs its own endpoint
 * (service type `placement`) and, by default, an admin token.
 */
export type PlacementUsagesReader = (projectId: string, signal: AbortSignal) => Promise<Record<string, number>>;

/** What placement says, or why it was not read. */
export type PlacementReading = { read: true; cores: number; ramMiB: number } | { read: false; reason: string };

/** Read placement's usage with `reader`; a failure (403, no endpoint) is a reason, not an error. Aborts and auth failures are rethrown. */
export async function readPlacement(reader: PlacementUsagesReader | undefined, projectId: string | undefined, signal: AbortSignal): Promise<PlacementReading> {
  if (!reader) return { read: false, reason: 'not read: no readPlacementUsages given (the client talks to compute only), so a leaked allocation shows as stale-usage at most' };
  if (!projectId) return { read: false, reason: 'not read: no project id known' };
  try {
    const u = await reader(projectId, signal);
    return { read: true, cores: Number(u['VCPU'] ?? 0), ramMiB: Number(u['MEMORY_MB'] ?? 0) };
  } catch (e) {
    if (isAbortError(e) || e instanceof AuthError) throw e;
    return { read: false, reason: `not read: ${(e as Error).message}` };
  }
}

/** In words, for {@link QuotaAudit.placementUsage}. */
export function describePlacement(p: PlacementReading): string {
  return p.read ? `read: ${p.cores} VCPU, ${p.ramMiB} MEMORY_MB allocated` : p.reason;
}

/**
 * The `leaked-allocation` finding when placement's cores or RAM differ from the range the listed
 * servers' allocations can take (`range`: their placement holdings), else undefined.
 */
export function leakedAllocation(p: PlacementReading, range: { min: Usage; max: Usage }): Finding | undefined {
  if (!p.read) return undefined;
  const holds = zeroUsage();
  holds.cores = p.cores > range.max.cores ? p.cores - range.max.cores : p.cores < range.min.cores ? p.cores - range.min.cores : 0;
  holds.ramMiB = p.ramMiB > range.max.ramMiB ? p.ramMiB - range.max.ramMiB : p.ramMiB < range.min.ramMiB ? p.ramMiB - range.min.ramMiB : 0;
  if (holds.cores === 0 && holds.ramMiB === 0) return undefined;
  const over = holds.cores > 0 || holds.ramMiB > 0;
  return {
    kind: 'leaked-allocation',
    transient: false,
    needsOperator: true,
    serverIds: [],
    holds,
    evidence:
      `placement allocates ${p.cores} VCPU and ${p.ramMiB} MEMORY_MB to the project; its listed servers account for ` +
      `${range.min.cores}${range.max.cores !== range.min.cores ? `-${range.max.cores}` : ''} VCPU and ${range.min.ramMiB}${range.max.ramMiB !== range.min.ramMiB ? `-${range.max.ramMiB}` : ''} MEMORY_MB` +
      (over ? ': allocations with no server behind them' : ': servers without their allocations'),
    projectCan: over ? 'nothing: the allocations belong to no server of the project; ask an operator' : 'nothing needed for quota; ask an operator to heal them',
    operatorCan: over ? '`nova-manage placement audit --delete` (removes orphaned allocations)' : '`nova-manage placement heal_allocations`',
  };
}
