/**
 * The quota guard: headroom before a create, claims, backoff on transient quota 403s, and the
 * settling of late quota faults.
 *
 * @module
 */
export { QuotaGuard, quotaGuard, QUOTA_GUARD_DEFAULTS, QUOTA_LEDGER_DEFAULTS } from './quotaGuard.js';
export { EXPLAIN_EVERY_WAITS } from './options.js';
export type {
  QuotaGuardOptions,
  QuotaGuardStats,
  QuotaWaitInfo,
  QuotaRetryInfo,
  QuotaRetryReason,
  GuardedCallOptions,
  GuardedCreateOptions,
  QuotaNeedsSpec,
  GuardClaimInfo,
  UnsettledCreate,
  LiveClaimMark,
} from './quotaGuard.js';
export { QuotaWaitTimeoutError, ServerBuildError, CreateOutcomeUnknownError, QuotaNeverFitsError, QuotaBuildFaultError } from './errors.js';
export type { QuotaWaitTimeoutInit, ServerBuildInit, ServerBuildFailure, CreateOutcomeUnknownInit, QuotaNeverFitsInit, QuotaBuildFaultInit } from './errors.js';
export { CLAIM_TAG_KEY } from './lostCreate.js';
export { computeHeadroom, checkFit, describeShortfalls } from '../ledger/index.js';
export type { QuotaNeeds, Headroom, ResourceHeadroom, Shortfall, FitVerdict, QuotaResourceName } from '../ledger/index.js';
export type { ResolvedOptions as ResolvedQuotaGuardOptions } from './options.js';
export { backoffDelayMs } from './retryPolicy.js';
export type { ShortfallCause, ShortfallExplanation } from './explain.js';
export type { BackoffPolicy } from './retryPolicy.js';
export { waitForActive, isPastScheduling } from './waitForActive.js';
export type { WaitForActiveOptions, WaitForActiveResult, ActiveOutcome } from './waitForActive.js';
export type { QuotaLedger, LimitsReading, LedgerPlace, LedgerClaim, LedgerLimits, RawHeadroom, AdmitRequest, Admission, ClaimEnd, LedgerScope, AcquireRequest, Acquisition, UncountedServer, UncountedRead } from '../ledger/index.js';
export { isLedgerDown, waitForOthersRead } from '../ledger/index.js';
export { InProcessQuotaLedger } from '../ledger/index.js';
export type { InProcessQuotaLedgerOptions } from '../ledger/index.js';
export { CLAIM_ID_KEY, CLAIM_TOKEN_KEY, CLAIM_HOLDER_KEY } from './ledgerUse.js';
