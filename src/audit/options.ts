/**
 * The option specs of the audit's entry points (`auditQuota`, `watchQuota`): what each takes, checked
 * before any request (see `core/options.ts`).
 *
 * @module
 */
import { is } from '../core/validate.js';
import type { OptionsSpec } from '../core/options.js';
import type { AuditQuotaOptions } from './types.js';

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
  readPlacementUsages: is.function,
  ownedBy: is.function,
};

