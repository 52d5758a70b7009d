/**
 * The shapes an audit reports per resource, shared by the audit and its verdict.
 *
 * @module
 */
import type { LoggerOption } from '../core/logger.js';
import type { ResourceAmounts, Server } from '../core/types.js';
import type { CountingModel, ModelFit } from './model.js';
import type { Finding } from './findings.js';
import type { PlacementUsagesReader } from './placement.js';

/** One reading of reported usage and limits. Missing values are undefined; unlimited is `Infinity`. */
export interface UsageReading {
  /** Where it came from. */
  source: 'limits' | 'quota-set-detail';
  /** Usage Nova reports (`totalCoresUsed`, `totalRAMUsed`, `totalInstancesUsed`, or `in_use`). */
  used: Partial<ResourceAmounts>;
  /** Limits (`maxTotalCores`, `maxTotalRAMSize`, `maxTotalInstances`, or `limit`). */
  limit: Partial<ResourceAmounts>;
  /** `x-openstack-request-id` of the response, when known. */
  requestId?: string | undefined;
}

/** How reported usage compares with the count. */
export type AuditVerdict = 'consistent' | 'over-reported' | 'under-reported' | 'inconclusive';

/** The audit of one resource (`ramMiB`: in MiB). */
export interface ResourceAudit {
  /** Usage Nova reported before the listing (`/limits`, else the quota-set detail). */
  reportedBefore: number | undefined;
  /** Usage of the listed servers, counted the way Nova counts it (BUILD servers included). */
  counted: number;
  /** The part of `counted` held by servers in BUILD (Nova may not count them yet). */
  countedInBuild: number;
  /** The part of `counted` held by ghosts (listed servers whose GET answers 404). */
  countedInGhosts: number;
  /** Usage Nova reported after the listing. */
  reportedAfter: number | undefined;
  /** The quota limit; `Infinity` when unlimited (-1), undefined when not reported. */
  limit: number | undefined;
  /**
   * `reported − counted`: positive when Nova reports more than the servers hold. `null` when the two
   * readings differ, a reading is missing, or the count is incomplete (unknown flavors).
   */
  drift: number | null;
  /** This resource's verdict. */
  verdict: AuditVerdict;
}

/** Options of {@link auditQuota}. */
export interface AuditQuotaOptions {
  /** Abort the audit: it rejects with {@link AbortError}; nothing of it is left running. */
  signal?: AbortSignal | undefined;
  /**
   * Time box of the whole audit (both readings, every page, flavors, ghost checks), in ms. When it
   * passes the audit rejects with {@link AbortError} (its message names `timeoutMs`), every request of it
   * aborted. `Infinity` means no time box.
   * @default 300000 (5 min)
   */
  timeoutMs?: number;
  /** GET every listed server to find ghosts (listed, but its own GET answers 404). Default true. */
  checkGhosts?: boolean;
  /** How many ghost-check GETs run at once. Default 8. */
  ghostCheckConcurrency?: number;
  /** Clock for server ages, epoch ms. Default the client's clock (`wallNow`). */
  now?: () => number;
  /** pino logger. Default: the client's logger. */
  logger?: LoggerOption | undefined;
  /** Project whose quota-set detail is read. Default: the client's `projectId`; without one it is skipped. */
  projectId?: string | undefined;
  /** Read `GET /os-quota-sets/{project_id}/detail` as well as `/limits`. Default true. */
  readQuotaSetDetail?: boolean;
  /** Page size (`limit`) of the server listing; every page is read. Default: Nova's own (`max_limit`, 1000). */
  pageSize?: number | undefined;
  /**
   * How the cloud counts usage, when known: `legacy` (cell databases, Nova's default),
   * `placement` (`[quota] count_usage_from_placement = True`) or `unified-limits` (limits in Keystone;
   * counted as from placement). Default: inferred from the readings (`countingModel.basis`).
   */
  countingModel?: CountingModel | undefined;
  /** A deletion older than this (since the server's `updated`), in ms, is `stuck-deleting`. @default 600000 (10 min) */
  stuckAfterMs?: number | undefined;
  /**
   * A server in BUILD for longer than this since its `created`, in ms, is `stuck-build` (stuck, not
   * under way; it needs an operator), no longer `build-in-flight`. Nova's own bound,
   * `[compute] instance_build_timeout`, is off (0) by default; nodepool's launch timeout is 3600 s.
   * `Infinity`: never stuck.
   * @default 3600000 (1 h)
   */
  stuckBuildAfterMs?: number | undefined;
  /**
   * Reads placement's usage of the project (`GET /usages?project_id=` on the placement endpoint, which
   * needs its own URL and usually an admin token); with it the audit can name a `leaked-allocation`.
   * Default: placement is not read.
   */
  readPlacementUsages?: PlacementUsagesReader | undefined;
  /** Which listed servers are the caller's; the others are reported as `foreign-usage`. Default: all are. */
  ownedBy?: ((server: Server) => boolean) | undefined;
}

/** One listed server as the audit saw it. */
export interface AuditedServer {
  id: string;
  name: string | undefined;
  status: string;
  taskState: string | undefined;
  vmState: string | undefined;
  /** Its flavor's vCPUs (`cores`), undefined when the flavor could not be read or has none. */
  cores: number | undefined;
  /** Its flavor's RAM in MiB (`ramMiB`), undefined when the flavor could not be read or has none. */
  ramMiB: number | undefined;
  /**
   * True when Nova's legacy counting counts the server (every listed server but a soft-deleted one: a
   * listed DELETED record counts until its row is destroyed). Per counting model: `holds`.
   */
  counted: boolean;
  /** Time since `created`, in ms (0 when in the future); undefined without a valid `created`. */
  ageMs: number | undefined;
  /** What it holds under the audit's counting model (`QuotaAudit.countingModel`), at least. */
  holds?: ResourceAmounts | undefined;
  /** Why it holds that, in words. */
  why?: string | undefined;
}

/** A server that is neither ACTIVE nor ERROR, or has a task in progress. */
export interface SuspectServer extends AuditedServer {
  /** Why it is suspect, e.g. `status BUILD`, `task_state deleting`. */
  reasons: string[];
}

/** A listed server whose own `GET /servers/{id}` answered 404. */
export interface GhostServer extends AuditedServer {
  /** `x-openstack-request-id` of the 404, for the operator's ticket. */
  requestId: string | undefined;
}

/** What {@link auditQuota} resolves. */
export interface QuotaAudit {
  /** Overall verdict; see `describeAudit` for the rules. */
  verdict: AuditVerdict;
  /** The verdict in words, one or two sentences. */
  summary: string;
  /** False when reported usage changed between the two readings: the comparison is inconclusive. */
  stable: boolean;
  /** Per resource: reported before, counted, reported after, limit, drift. */
  resources: Record<keyof ResourceAmounts, ResourceAudit>;
  /** The raw readings. The quota-set ones are absent when not read (no project id, 403, ...). */
  readings: {
    limitsBefore: UsageReading;
    limitsAfter: UsageReading;
    quotaSetBefore?: UsageReading | undefined;
    quotaSetAfter?: UsageReading | undefined;
  };
  /** Every listed server. */
  servers: AuditedServer[];
  /** Number of listed servers by status. */
  byStatus: Record<string, number>;
  /** Servers not ACTIVE or ERROR, or with a task_state, oldest first. */
  suspects: SuspectServer[];
  /** Listed servers whose GET answered 404. Empty when the check is off. */
  ghosts: GhostServer[];
  /** Whether the ghost check ran. */
  ghostsChecked: boolean;
  /** Servers whose flavor could not be read: their cores and RAM are missing from `counted`. */
  uncounted: Array<{ serverId: string; reason: string }>;
  /**
   * Listed servers with status UNKNOWN: their cell does not answer (Nova API guide, "Down cells": from
   * microversion 2.69 they are stubs without name, metadata or flavor). They exist: each counts as an
   * instance (never as freed), their cores and RAM are unknown, and they are not ghost-checked.
   */
  unreachable: AuditedServer[];
  /**
   * Servers in ERROR that were never scheduled (their fault says "No valid host was found": they live
   * in cell0). Counted as an instance and, as legacy counting does, with their flavor's cores and RAM;
   * with counting from placement Nova gives them no cores or RAM, so the verdict accepts either.
   */
  unscheduled: AuditedServer[];
  /** The counting model the audit explains the usage with, and how each model fits the readings. */
  countingModel: ModelFit;
  /** Each cause of drift found, with its servers, evidence and remedy; see `docs/audit.md`. */
  findings: Finding[];
  /**
   * True when some finding needs an operator (`findings[].needsOperator`: quota the project cannot
   * free itself), whatever the verdict: an orphaned mapping leaves the numbers consistent. The CLI
   * exits 5 then.
   */
  needsOperator: boolean;
  /** Whether placement's usage (`GET /usages?project_id=`) was read, in words. */
  placementUsage: string;
  /** True when the audit could not see everything (servers in a cell that does not answer); see `partialReasons`. */
  partial: boolean;
  /** Why the audit is partial, in words; empty when it is not. */
  partialReasons: string[];
  /** Things worth knowing that did not stop the audit (a 403 on the quota-set detail, ...). */
  notes: string[];
  /** Pages of the server listing read. */
  pages: number;
  /** When the audit started (the `now` clock), epoch ms. */
  startedAtMs: number;
  /** Wall-clock time of the audit, ms. */
  elapsedMs: number;
}
