/**
 * nova-guard: delete-and-wait, quota headroom guard and quota audit for CI workers on OpenStack Nova.
 *
 * @module
 */
export { NovaClient, parseAbsoluteLimits } from './client.js';
export type { NovaClientOptions, RequestOptions, RetryOptions, RawRequest, RawResponse, ListServersQuery, ClientStats } from './client.js';
export { StaticTokenProvider } from './auth.js';
export type { AuthProvider, GetTokenOptions } from './auth.js';
export { waitForDelete } from './waitForDelete.js';
export type { WaitForDeleteOptions, WaitForDeleteResult, WaitOutcome, DeleteProgress } from './waitForDelete.js';
export { deleteServer, deleteServers } from './deleteServer.js';
export type {
  DeleteServerOptions,
  DeleteServerResult,
  DeleteOutcome,
  DeleteServersOptions,
  DeleteServersResult,
  DeleteSettled,
} from './deleteServer.js';
export * from './errors.js';
export { parseQuotaMessage } from './quotaMessage.js';
export type { ParsedQuotaMessage } from './quotaMessage.js';
export type * from './types.js';
export type { Logger } from './logger.js';
export { auditQuota } from './quotaAudit.js';
export type { AuditQuotaOptions, QuotaAudit, ResourceAudit, AuditVerdict, AuditedServer, SuspectServer, GhostServer, UsageReading, AuditResource, Usage } from './quotaAudit.js';
export { Reaper, reapServers } from './reaper.js';
export type { ReaperOptions, ReapServersOptions, ReapResult, ReapPassResult, ReapDeleted, ReapFailure, ReapEvent, ReapCandidate, ReapSkip, ReapSkipReason, ReaperState, SeenCandidate, FleetSelector } from './reaper.js';
export { readReaperState, writeReaperState } from './reaperState.js';
