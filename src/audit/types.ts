/**
 * The shapes an audit reports per resource, shared by the audit and its verdict.
 *
 * @module
 */
import type { Usage } from './count.js';

/** One reading of reported usage and limits. Missing values are undefined; unlimited is `Infinity`. */
export interface UsageReading {
  /** Where it came from. */
  source: 'limits' | 'quota-set-detail';
  /** Usage Nova reports (`totalCoresUsed`, `totalRAMUsed`, `totalInstancesUsed`, or `in_use`). */
  used: Partial<Usage>;
  /** Limits (`maxTotalCores`, `maxTotalRAMSize`, `maxTotalInstances`, or `limit`). */
  limit: Partial<Usage>;
  /** `x-openstack-request-id` of the response, when known. */
  requestId?: string | undefined;
}

/** How reported usage compares with the count. */
export type AuditVerdict = 'consistent' | 'over-reported' | 'under-reported' | 'inconclusive';

/** The audit of one resource. `ram` values are MiB. */
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

