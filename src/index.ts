/**
 * nova-guard: delete-and-wait, quota headroom guard and quota audit for CI workers on OpenStack Nova.
 *
 * The main entry holds what a worker, an audit cron or its tests name: the client and its
 * authentication, the delete and the wait, the guard, the audit, the reaper, configuration, and every
 * error class. One name per thing: amounts are {@link ResourceAmounts} (`cores`, `ramMiB`,
 * `instances`), findings {@link QuotaFinding}. The plumbing under them (the delete engine, headroom
 * arithmetic, ledger records, telemetry helpers) stays in the capability folders. `nova-guard/testing`
 * (FakeNova, FakeKeystone) and `nova-guard/redis` (RedisQuotaLedger) and `nova-guard/sqlite` (SqliteQuotaLedger) are separate entries.
 *
 * @module
 */

// Nova and authentication.
export { NovaClient } from './nova/index.js';
export type { NovaClientOptions, CloudClientOptions, RequestOptions, RetryOptions, ListServersQuery } from './nova/index.js';
export { StaticTokenProvider, KeystoneAuth } from './auth/index.js';
export type { AuthProvider, GetTokenOptions, KeystoneAuthOptions, KeystoneCredentials } from './auth/index.js';

// Shared shapes.
export type { Server, Flavor, CreateServerBody, ResourceAmounts, QuotaFinding, QuotaFindingKind } from './core/index.js';
export type { Clock, LoggerOption } from './core/index.js';
export { systemClock } from './core/index.js';

// Deleting servers and waiting for it.
export { deleteServer, deleteServers, waitForDelete, InProcessFleet } from './delete/index.js';
export type {
  DeleteServerOptions,
  DeleteServerResult,
  DeleteOutcome,
  DeleteServersOptions,
  DeleteServersResult,
  DeleteSettled,
  DeleteProgress,
  WaitForDeleteOptions,
  WaitForDeleteResult,
  WaitOutcome,
  UnconfirmedDelete,
} from './delete/index.js';

// Errors: every one derives from NovaGuardError.
export {
  NovaGuardError,
  AbortError,
  ValidationError,
  ConfigError,
  isAbortError,
  NovaApiError,
  NotFoundError,
  ConflictError,
  BadRequestError,
  ForbiddenError,
  AuthError,
  RateLimitError,
  RequestTooLargeError,
  ServerError,
  InvalidResponseError,
  NovaNetworkError,
  QuotaExceededError,
  DeleteTimeoutError,
  DeleteFailedError,
  OrphanedServerError,
  OperationTimeoutError,
  LedgerConfigError,
} from './errors/index.js';
export type { QuotaResource, FailureSummary } from './errors/index.js';
export { EndpointNotFoundError } from './auth/index.js';
export { parseQuotaMessage } from './errors/quotaMessage.js';

// The quota guard.
export { QuotaGuard, InProcessQuotaLedger, waitForActive, waitForOthersRead } from './guard/index.js';
export { QuotaWaitTimeoutError, QuotaNeverFitsError, QuotaBuildFaultError, ServerBuildError, CreateOutcomeUnknownError } from './guard/index.js';
export type {
  QuotaGuardOptions,
  QuotaGuardStats,
  QuotaNeedsSpec,
  GuardedCreateOptions,
  GuardedCallOptions,
  GuardClaimInfo,
  QuotaWaitInfo,
  QuotaRetryInfo,
  Headroom,
  Shortfall,
  QuotaLedger,
  InProcessQuotaLedgerOptions,
  WaitForActiveOptions,
  WaitForActiveResult,
} from './guard/index.js';

// The quota audit.
export { auditQuota, formatAudit, watchQuota } from './audit/index.js';
export type { AuditQuotaOptions, QuotaAudit, AuditVerdict, ResourceAudit, AuditedServer, CountingModel, PlacementUsagesReader, WatchQuotaOptions, WatchSample, QuotaWatch } from './audit/index.js';

// The reaper.
export { Reaper, reapServers, readReaperState, writeReaperState } from './reaper/index.js';
export type { ReaperOptions, ReaperRunOptions, ReapServersOptions, ReapResult, ReapEvent, ReaperState, FleetSelector } from './reaper/index.js';

// Configuration (clouds.yaml, secure.yaml, OS_* variables).
export { loadCloudConfig, resolveClientOptions } from './config/index.js';
export { Secret } from './core/secret.js';
export type { CloudConfig, LoadCloudConfigOptions } from './config/index.js';
