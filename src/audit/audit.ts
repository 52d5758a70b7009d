/**
 * `auditQuota(client, options)`: where did the quota go? Compares the usage Nova reports with the
 * usage of the servers it lists, the way the field's first diagnostic script did: reported usage,
 * then every server, then reported usage again.
 *
 * Steps (all reads, no writes):
 * 1. `GET /limits` (Nova API reference, "Limits") and, when a project id is known,
 *    `GET /os-quota-sets/{project_id}/detail` ("Quota Sets", "Show The Detail of Quota"); a 403 or 404
 *    on the quota-set detail is noted, not fatal.
 * 2. `GET /servers/detail`, every page ("List Servers Detailed"), at microversion 2.69 or later when
 *    Nova supports it (Nova API guide, "Down cells"; a 406 falls back to the client's microversion and
 *    marks the audit partial); flavors from the server (2.47+) or `GET /flavors/{id}` (cached).
 * 3. `GET /limits` (and the quota-set detail) again.
 * 4. Optionally `GET /servers/{id}` for every listed server at bounded concurrency: a 404 marks a ghost
 *    (an orphaned instance mapping).
 * 5. Optionally placement's usages, through the caller's `readPlacementUsages`.
 *
 * Counting follows Nova per counting model (`model.ts`: legacy counting, counting from placement,
 * unified limits; `docs/audit.md`): the model that fits the readings is inferred (or given), each
 * server's holding is explained, and each cause of drift becomes a typed finding (`findings.ts`).
 *
 * @module
 */
import pLimit from 'p-limit';
import type { NovaClient } from '../nova/client.js';
import { AuthError, ForbiddenError, NotFoundError, OperationTimeoutError, isAbortError, throwIfAborted } from '../errors/index.js';
import { componentLogger } from '../core/logger.js';
import {
  AUDIT_RESOURCES,
  addUsage,
  countsTowardUsage,
  resolveFlavorSizes,
  statusOf,
  suspectReasons,
  taskStateOf,
  usageOf,
  zeroUsage,
  type AuditResource,
} from './count.js';
import type { QuotaResourceName, QuotaSetDetail, Server } from '../core/types.js';
import { describeAudit } from './verdict.js';
import { isServerNotFound } from '../transport/http.js';
import { timeoutSignal } from '../core/clock.js';
import { checkOptions } from '../core/options.js';
import { AUDIT_QUOTA_SPEC, DEFAULT_AUDIT_TIMEOUT_MS, DEFAULT_STUCK_AFTER_MS, DEFAULT_STUCK_BUILD_AFTER_MS } from './options.js';
import { NovaApiError } from '../errors/index.js';
import { presenceMicroversion } from '../delete/observe.js';
import { holdingOf, inferModel, outside, sumHoldings, neverScheduled } from './model.js';
import { findCauses } from './findings.js';
import { describePlacement, leakedAllocation, readPlacement } from './placement.js';
import { fillListedFaults } from './faults.js';

export type { AuditVerdict, ResourceAudit, AuditQuotaOptions, AuditedServer, QuotaAudit } from './types.js';
import type { UsageReading, ResourceAudit, AuditQuotaOptions, AuditedServer, SuspectServer, GhostServer, QuotaAudit } from './types.js';

function fromLimits(absolute: Record<string, number | undefined>, requestId: string | undefined): UsageReading {
  return {
    source: 'limits',
    used: { cores: absolute['totalCoresUsed'], ramMiB: absolute['totalRAMUsed'], instances: absolute['totalInstancesUsed'] },
    limit: { cores: absolute['maxTotalCores'], ramMiB: absolute['maxTotalRAMSize'], instances: absolute['maxTotalInstances'] },
    requestId,
  };
}

function fromQuotaSet(detail: QuotaSetDetail): UsageReading {
  const item = (r: QuotaResourceName): { in_use?: number; limit?: number } => {
    const v = detail[r];
    return v && typeof v === 'object' ? v : {};
  };
  return {
    source: 'quota-set-detail',
    used: { cores: item('cores').in_use, ramMiB: item('ram').in_use, instances: item('instances').in_use },
    limit: { cores: item('cores').limit, ramMiB: item('ram').limit, instances: item('instances').limit },
  };
}

/**
 * Audit the project's quota usage: reported (twice) against counted. Read-only.
 *
 * @example
 * ```ts
 * const audit = await auditQuota(nova);
 * if (audit.verdict !== 'consistent') console.log(audit.summary);
 * ```
 * @throws {@link ValidationError} for bad options (before any request); the {@link NovaApiError} of
 * `/limits` or the listing (the audit cannot go on without them); {@link AbortError} when `signal`
 * aborts; {@link OperationTimeoutError} (`operation` `auditQuota`) when `timeoutMs` runs out. A 403/404 on the quota-set detail, an unreadable flavor and a failed ghost GET are noted.
 */
export async function auditQuota(client: NovaClient, options: AuditQuotaOptions = {}): Promise<QuotaAudit> {
  checkOptions('auditQuota options', options, AUDIT_QUOTA_SPEC);
  throwIfAborted(options.signal);
  const timeoutMs = options.timeoutMs ?? DEFAULT_AUDIT_TIMEOUT_MS;
  const startedAt = client.clock.now();
  const deadline = Number.isFinite(timeoutMs) ? timeoutSignal(client.clock, timeoutMs, () => new Error('timeoutMs')) : undefined;
  // Aborted when the audit settles: no request of it (a sibling of a failed one) outlives it.
  const settled = new AbortController();
  const signal = AbortSignal.any([settled.signal, ...(options.signal ? [options.signal] : []), ...(deadline ? [deadline.signal] : [])]);
  try {
    return await audit(client, options, signal);
  } catch (e) {
    if (deadline?.signal.aborted && !options.signal?.aborted) {
      throw new OperationTimeoutError(`The quota audit did not finish within timeoutMs (${timeoutMs} ms)`, {
        operation: 'auditQuota',
        timeoutMs,
        elapsedMs: Math.round(client.clock.now() - startedAt),
        // What was in flight, when it was a failure of its own (not the abort the deadline caused).
        cause: isAbortError(e) ? undefined : e,
      });
    }
    throw e;
  } finally {
    deadline?.dispose();
    settled.abort();
  }
}

async function audit(client: NovaClient, options: AuditQuotaOptions, signal: AbortSignal): Promise<QuotaAudit> {
  const now = options.now ?? (() => client.clock.wallNow());
  const log = componentLogger(options.logger ?? client.logger, 'quota-audit');
  const started = client.clock.now();
  const startedAtMs = now();
  const notes: string[] = [];
  const projectId = options.projectId ?? client.projectId;
  let readDetail = options.readQuotaSetDetail ?? true;
  if (readDetail && !projectId) {
    notes.push('quota-set detail not read: no project id known');
    readDetail = false;
  }

  const readQuotaSet = async (): Promise<UsageReading | undefined> => {
    if (!readDetail) return undefined;
    try {
      return fromQuotaSet(await client.getQuotaSetDetail(projectId, { signal }));
    } catch (e) {
      if (e instanceof ForbiddenError || e instanceof NotFoundError) {
        readDetail = false;
        notes.push(`quota-set detail not readable (${e.status}): ${e.message}`);
        log.info({ status: e.status, requestId: e.requestId }, 'quota-set detail not readable');
        return undefined;
      }
      throw e;
    }
  };
  const readBoth = async (): Promise<[UsageReading, UsageReading | undefined]> => {
    const [limits, quotaSet] = await Promise.all([client.getLimits({ signal }), readQuotaSet()]);
    return [fromLimits(limits.absolute, limits.requestId), quotaSet];
  };

  const [limitsBefore, quotaSetBefore] = await readBoth();
  // The audit's own deadline bounds its listing (not the listing's shorter default).
  // Listed at 2.69 or later when Nova supports it, so servers of a cell that does not answer show as
  // UNKNOWN stubs instead of missing (Nova API guide, "Down cells"); a 406 means an older Nova.
  const query = options.pageSize ? { limit: options.pageSize } : {};
  const presence = presenceMicroversion(client.microversion);
  let downCellsInvisible = false;
  const listAt = (microversion?: string): ReturnType<NovaClient['listServersWithMeta']> =>
    client.listServersWithMeta(query, { signal, timeoutMs: Number.POSITIVE_INFINITY, ...(microversion ? { microversion } : {}) });
  let listing: Awaited<ReturnType<NovaClient['listServersWithMeta']>>;
  try {
    listing = await listAt(presence === client.microversion ? undefined : presence);
  } catch (e) {
    if (!(e instanceof NovaApiError && e.status === 406 && presence !== client.microversion)) throw e;
    downCellsInvisible = true;
    notes.push(`Nova refused microversion ${presence} (406): listed at ${client.microversion}, where servers of a cell that does not answer are left out`);
    listing = await listAt();
  }
  const [limitsAfter, quotaSetAfter] = await readBoth();
  log.debug({ servers: listing.servers.length, pages: listing.pages }, 'servers listed');

  // A down cell's stub: it exists, its size is unknown, and its GET may answer 500.
  const isUnreachable = (s: Server): boolean => statusOf(s) === 'UNKNOWN';
  const reachable = listing.servers.filter((s) => !isUnreachable(s));
  const flavors = await resolveFlavorSizes(client, reachable, signal);
  const audited = listing.servers.map((s) => toAudited(s, flavors.sizes.get(s.id), now()));
  const unreachable = audited.filter((a, i) => isUnreachable(listing.servers[i]!));
  const uncounted = [...flavors.unknown, ...unreachable.map((a) => ({ serverId: a.id, reason: 'status UNKNOWN: its cell does not answer' }))];
  const partialReasons: string[] = [];
  if (downCellsInvisible) partialReasons.push(`Nova lists below microversion 2.69 only: servers of a cell that does not answer would be missing from the listing`);
  if (unreachable.length > 0) {
    const n = unreachable.length;
    partialReasons.push(
      `${n} listed ${n === 1 ? 'server has' : 'servers have'} status UNKNOWN: a cell does not answer, so their size is unknown, ` +
        `Nova may not count them, and servers of that cell may be missing from the listing`,
    );
    log.warn({ unreachable: n }, 'servers with status UNKNOWN: the audit is partial');
  }

  const ghostsChecked = options.checkGhosts ?? true;
  const fetched = ghostsChecked ? new Map<string, Server>() : undefined;
  const ghosts = fetched ? await findGhosts(client, listing.servers, audited, options.ghostCheckConcurrency ?? 8, notes, signal, isUnreachable, fetched) : [];
  // A server never scheduled (cell0) is listed without its fault: its own GET has it.
  await fillListedFaults(client, listing.servers, fetched, options.ghostCheckConcurrency ?? 8, notes, signal);
  const unscheduled = audited.filter((a, i) => neverScheduled(listing.servers[i]!));

  const counted = zeroUsage();
  const inBuild = zeroUsage();
  const inGhosts = zeroUsage();
  // What Nova may rightly leave out of its number: a cell that does not answer (legacy counting), the
  // cores and RAM of a server never scheduled (counting from placement).
  const mayBeUncounted = zeroUsage();
  const ghostIds = new Set(ghosts.map((g) => g.id));
  for (const s of listing.servers) {
    const u = usageOf(s, flavors.sizes.get(s.id));
    addUsage(counted, u);
    if (statusOf(s) === 'BUILD') addUsage(inBuild, u);
    if (ghostIds.has(s.id)) addUsage(inGhosts, u);
    if (isUnreachable(s)) addUsage(mayBeUncounted, u);
    else if (neverScheduled(s)) addUsage(mayBeUncounted, { ...u, instances: 0 });
  }

  const reported = (r: UsageReading, q: UsageReading | undefined, res: AuditResource): number | undefined => r.used[res] ?? q?.used[res];
  const resources = {} as Record<AuditResource, ResourceAudit>;
  for (const res of AUDIT_RESOURCES) {
    resources[res] = {
      reportedBefore: reported(limitsBefore, quotaSetBefore, res),
      counted: counted[res],
      countedInBuild: inBuild[res],
      countedInGhosts: inGhosts[res],
      reportedAfter: reported(limitsAfter, quotaSetAfter, res),
      limit: limitsBefore.limit[res] ?? quotaSetBefore?.limit[res],
      drift: null,
      verdict: 'inconclusive',
    };
  }
  for (const res of AUDIT_RESOURCES) {
    const lq = limitsBefore.used[res];
    const qq = quotaSetBefore?.used[res];
    if (lq !== undefined && qq !== undefined && lq !== qq) notes.push(`/limits and the quota-set detail disagree on ${res}: ${lq} vs ${qq}`);
  }
  // Compared only when both were read (a 403 on the second read alone is not a change of usage).
  const quotaSetStable = !quotaSetBefore || !quotaSetAfter || AUDIT_RESOURCES.every((r) => quotaSetBefore.used[r] === quotaSetAfter.used[r]);
  const stable = quotaSetStable && AUDIT_RESOURCES.every((r) => resources[r].reportedBefore === resources[r].reportedAfter);
  if (!quotaSetStable) notes.push('the quota-set detail changed between the two readings');

  const suspects: SuspectServer[] = listing.servers
    .map((s, i) => ({ ...audited[i]!, reasons: suspectReasons(s) }))
    .filter((s) => s.reasons.length > 0)
    .sort((a, b) => (b.ageMs ?? -1) - (a.ageMs ?? -1));
  const byStatus: Record<string, number> = {};
  for (const s of audited) byStatus[s.status] = (byStatus[s.status] ?? 0) + 1;

  // The counting model that fits the readings (or the one given), and what each server holds under it.
  const sizeOf = (s: Server): { vcpus: number; ram: number } | undefined => flavors.sizes.get(s.id);
  const legacy = listing.servers.map((s) => holdingOf(s, sizeOf(s), 'legacy'));
  const placement = listing.servers.map((s) => holdingOf(s, sizeOf(s), 'placement'));
  const reportedNow: Partial<Record<AuditResource, number>> = {};
  for (const res of AUDIT_RESOURCES) if (resources[res].reportedBefore !== undefined) reportedNow[res] = resources[res].reportedBefore;
  const ranges = { legacy: sumHoldings(legacy), placement: sumHoldings(placement) };
  const fit = inferModel(reportedNow, ranges, options.countingModel);
  const usePlacement = fit.model !== 'legacy';
  const holdings = usePlacement ? placement : legacy;
  audited.forEach((a, i) => {
    a.holds = holdings[i]!.min;
    a.why = holdings[i]!.why;
  });
  const excess = stable ? outside(reportedNow, usePlacement ? ranges.placement : ranges.legacy) : {};
  const ownedBy = options.ownedBy;
  const findings = findCauses({
    servers: listing.servers,
    holdings,
    ghostIds,
    excess: Object.fromEntries(Object.entries(excess).filter(([, v]) => v > 0 && Number.isFinite(v))),
    foreign: (s) => (ownedBy ? !ownedBy(s) : false),
    nowMs: now(),
    stuckAfterMs: options.stuckAfterMs ?? DEFAULT_STUCK_AFTER_MS,
    stuckBuildAfterMs: options.stuckBuildAfterMs ?? DEFAULT_STUCK_BUILD_AFTER_MS,
    downCellsInvisible,
    model: fit.model,
  });
  const placementReading = await readPlacement(options.readPlacementUsages, projectId, signal);
  // A server of a cell that does not answer has an allocation of unknown size: no upper bound then.
  const leakRange = unreachable.length ? { min: ranges.placement.min, max: { ...ranges.placement.max, cores: Infinity, ramMiB: Infinity } } : ranges.placement;
  const leak = leakedAllocation(placementReading, leakRange);
  if (leak) findings.push(leak);

  // What the model in use lets Nova count beyond (or short of) the listed flavors.
  const range = usePlacement ? ranges.placement : ranges.legacy;
  const mayBeExtra = zeroUsage();
  for (const res of AUDIT_RESOURCES) {
    mayBeExtra[res] = Math.max(0, range.max[res] - counted[res]);
    mayBeUncounted[res] = Math.max(mayBeUncounted[res], counted[res] - inBuild[res] - range.min[res]);
  }
  const described = describeAudit({
    mayBeExtra,
    model: fit.model,
    resources,
    stable,
    serverCount: audited.length,
    countIncomplete: uncounted.length > 0,
    ghosts: ghosts.length,
    mayBeUncounted,
    partialReasons,
  });
  const { verdict } = described;
  const operatorFindings = findings.filter((f) => f.needsOperator);
  // An orphaned mapping or a stuck build leaves the numbers consistent: say it in the summary too.
  const summary = operatorFindings.length
    ? `${described.summary} An operator must act: ${operatorFindings.map((f) => f.kind + (f.serverIds.length ? ` (${f.serverIds.join(', ')})` : '')).join('; ')}.`
    : described.summary;
  const result: QuotaAudit = {
    verdict,
    summary,
    stable,
    resources,
    readings: { limitsBefore, limitsAfter, quotaSetBefore, quotaSetAfter },
    servers: audited,
    byStatus: Object.fromEntries(Object.entries(byStatus).sort(([a], [b]) => a.localeCompare(b))),
    suspects,
    ghosts,
    ghostsChecked,
    uncounted,
    unreachable,
    unscheduled,
    countingModel: fit,
    findings,
    needsOperator: operatorFindings.length > 0,
    placementUsage: describePlacement(placementReading),
    partial: partialReasons.length > 0,
    partialReasons,
    notes,
    pages: listing.pages,
    startedAtMs,
    elapsedMs: Math.round(client.clock.now() - started),
  };
  log.info({ verdict, stable, servers: audited.length, ghosts: ghosts.length, suspects: suspects.length }, 'quota audit done');
  return result;
}

function toAudited(s: Server, size: { vcpus: number; ram: number } | undefined, nowMs: number): AuditedServer {
  const created = typeof s.created === 'string' ? Date.parse(s.created) : Number.NaN;
  const vmState = s['OS-EXT-STS:vm_state'];
  return {
    id: s.id,
    name: s.name,
    status: statusOf(s) || 'UNKNOWN',
    taskState: taskStateOf(s),
    vmState: typeof vmState === 'string' ? vmState : undefined,
    cores: size?.vcpus,
    ramMiB: size?.ram,
    counted: countsTowardUsage(s),
    ageMs: Number.isFinite(created) ? Math.max(0, nowMs - created) : undefined,
  };
}

async function findGhosts(
  client: NovaClient,
  servers: readonly Server[],
  audited: readonly AuditedServer[],
  concurrency: number,
  notes: string[],
  signal: AbortSignal,
  skip: (s: Server) => boolean,
  fetched: Map<string, Server>,
): Promise<GhostServer[]> {
  const limit = pLimit(concurrency);
  signal.addEventListener('abort', () => limit.clearQueue(), { once: true });
  const found = await Promise.all(
    servers.map((s, i) =>
      limit(async (): Promise<GhostServer | undefined> => {
        // Its GET may answer 500 (a cell that does not answer): never a ghost, never freed.
        if (skip(s)) return undefined;
        try {
          fetched.set(s.id, await client.getServer(s.id, { signal }));
          return undefined;
        } catch (e) {
          if (isServerNotFound(e, s.id)) return { ...audited[i]!, requestId: (e as NotFoundError).requestId };
          if (isAbortError(e) || e instanceof AuthError) throw e;
          notes.push(`ghost check of server ${s.id} failed: ${(e as Error).message}`);
          return undefined;
        }
      }),
    ),
  );
  return found.filter((g): g is GhostServer => g !== undefined);
}
