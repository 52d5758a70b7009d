/**
 * The quota audit: Nova's reported usage against a count of the listed servers, with suspects,
 * ghosts and a verdict.
 *
 * @module
 */
export { auditQuota } from './audit.js';
export type { AuditQuotaOptions, QuotaAudit, ResourceAudit, AuditVerdict, AuditedServer, SuspectServer, GhostServer, UsageReading, AuditResource, Usage } from './audit.js';
export { formatAudit } from './format.js';
export type { CountingModel, ModelFit, Holding } from './model.js';
export type { Finding, FindingKind } from './findings.js';
export { watchQuota, driftTrend } from './watch.js';
export type { WatchQuotaOptions, WatchSample, QuotaWatch, DriftTrend } from './watch.js';
export type { PlacementUsagesReader } from './placement.js';
