/**
 * The options of the audit's entry points (`auditQuota`, `watchQuota`): their defaults, and the specs
 * that check what each takes before any request (see `core/options.ts`).
 *
 * @module
 */
import { is } from '../core/validate.js';
import type { OptionsSpec } from '../core/options.js';
import type { AuditQuotaOptions } from './types.js';

/** Default {@link AuditQuotaOptions.stuckAfterMs}: 10 min. */
export const DEFAULT_STUCK_AFTER_MS = 600_000;

/** Default {@link AuditQuotaOptions.stuckBuildAfterMs}: 1 h (nodepool's launch timeout, 3600 s). */
export const DEFAULT_STUCK_BUILD_AFTER_MS = 3_600_000;

/** Default {@link AuditQuotaOptions.timeoutMs}: 5 min. */
export const DEFAULT_AUDIT_TIMEOUT_MS = 300_000;

/** What `auditQuota` takes (see {@link AuditQuotaOptions}). */
export const AUDIT_QUOTA_SPEC: OptionsSpec<AuditQuotaOptions> = {
  signal: is.signal,
  timeoutMs: is.durationMs({ timer: true }),
  checkGhosts: is.boolean,
  ghostCheckConcurrency: is.integer({ min: 1 }),
  now: is.function,
  logger: is.object,
  projectId: is.string({ nonEmpty: true }),
  readQuotaSetDetail: is.boolean,
  pageSize: is.integer({ min: 1 }),
  countingModel: is.oneOf(['legacy', 'placement', 'unified-limits']),
  stuckAfterMs: is.durationMs(),
  stuckBuildAfterMs: is.durationMs(),
  readPlacementUsages: is.function,
  ownedBy: is.function,
};
