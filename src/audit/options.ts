/**
 * The options of `auditQuota`: their names, defaults and the checks made before any request.
 *
 * @module
 */
import { ValidationError } from '../errors/index.js';
import { checkDurationMs } from '../core/validate.js';
import { checkKnownOptions } from '../core/options.js';
import type { AuditQuotaOptions } from './types.js';

/** Default {@link AuditQuotaOptions.stuckAfterMs}: 10 min. */
export const DEFAULT_STUCK_AFTER_MS = 600_000;

/** Default {@link AuditQuotaOptions.stuckBuildAfterMs}: 1 h (nodepool's launch timeout, 3600 s). */
export const DEFAULT_STUCK_BUILD_AFTER_MS = 3_600_000;

/** The option names of `auditQuota`. */
export const AUDIT_OPTION_KEYS = [
  'signal',
  'timeoutMs',
  'checkGhosts',
  'ghostCheckConcurrency',
  'now',
  'logger',
  'projectId',
  'readQuotaSetDetail',
  'pageSize',
  'countingModel',
  'stuckAfterMs',
  'stuckBuildAfterMs',
  'readPlacementUsages',
  'ownedBy',
] as const;

/** Default {@link AuditQuotaOptions.timeoutMs}: 5 min. */
export const DEFAULT_AUDIT_TIMEOUT_MS = 300_000;

/**
 * Check the options of `auditQuota` before any request.
 * @throws {@link ValidationError} for an unknown option name or a bad value.
 */
export function checkOptions(options: AuditQuotaOptions): void {
  checkKnownOptions('auditQuota options', options, AUDIT_OPTION_KEYS);
  checkDurationMs('timeoutMs', options.timeoutMs, { timer: true });
  const c = options.ghostCheckConcurrency;
  if (c !== undefined && (!Number.isInteger(c) || c < 1)) throw new ValidationError(`ghostCheckConcurrency must be a positive integer, got ${String(c)}`);
  const p = options.pageSize;
  if (p !== undefined && (!Number.isInteger(p) || p < 1)) throw new ValidationError(`pageSize must be a positive integer, got ${String(p)}`);
  if (options.now !== undefined && typeof options.now !== 'function') throw new ValidationError('now must be a function returning epoch milliseconds');
  checkDurationMs('stuckAfterMs', options.stuckAfterMs);
  checkDurationMs('stuckBuildAfterMs', options.stuckBuildAfterMs);
  const m = options.countingModel;
  if (m !== undefined && m !== 'legacy' && m !== 'placement' && m !== 'unified-limits') throw new ValidationError(`countingModel must be 'legacy', 'placement' or 'unified-limits', got ${String(m)}`);
  if (options.readPlacementUsages !== undefined && typeof options.readPlacementUsages !== 'function') throw new ValidationError('readPlacementUsages must be a function');
  if (options.ownedBy !== undefined && typeof options.ownedBy !== 'function') throw new ValidationError('ownedBy must be a function of a server');
}
