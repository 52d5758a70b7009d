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
export type { UnconfirmedDelete } from './deleteLedger.js';
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
export { QuotaGuard, quotaGuard, QUOTA_GUARD_DEFAULTS } from './quotaGuard.js';
export type {
  QuotaGuardOptions,
  QuotaGuardStats,
  QuotaWaitInfo,
  QuotaRetryInfo,
  QuotaRetryReason,
  GuardedCallOptions,
  GuardedCreateOptions,
  QuotaNeedsSpec,
} from './quotaGuard.js';
export { computeHeadroom, checkFit, describeShortfalls } from './headroom.js';
export type { QuotaNeeds, Headroom, ResourceHeadroom, Shortfall, FitVerdict, QuotaResourceName } from './headroom.js';
export { backoffDelayMs } from './quotaBackoff.js';
export type { BackoffPolicy } from './quotaBackoff.js';
export { waitForActive } from './waitForActive.js';
export type { WaitForActiveOptions, WaitForActiveResult, ActiveOutcome } from './waitForActive.js';
export { KeystoneAuth, MIN_TOKEN_LIFE_MS, EndpointNotFoundError } from './keystone.js';
export type { KeystoneAuthOptions, KeystoneCredentials, KeystoneMethod, CatalogEntry, CatalogEndpoint, EndpointFilter } from './keystone.js';
export { loadCloudConfig, clientOptionsFromCloud, resolveClientOptions } from './config.js';
export type { CloudConfig, CloudAuth, CloudAuthType, LoadCloudConfigOptions, CloudClientOptions } from './config.js';
export { formatAudit } from './quotaAuditFormat.js';
