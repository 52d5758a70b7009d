/**
 * The quota audit: Nova's reported usage against a count of the listed servers, with suspects,
 * ghosts and a verdict.
 *
 * @module
 */
export { auditQuota } from './audit.js';
export type { AuditQuotaOptions, QuotaAudit, ResourceAudit, AuditVerdict, AuditedServer } from './audit.js';
export { formatAudit } from './format.js';
export type { CountingModel } from './model.js';
export type { Finding } from './findings.js';
export { watchQuota } from './watch.js';
export type { WatchQuotaOptions, WatchSample, QuotaWatch } from './watch.js';
export type { PlacementUsagesReader } from './placement.js';
