/**
 * Typed errors of nova-guard. Every one derives from {@link NovaGuardError}; the errors of an HTTP
 * exchange derive from {@link NovaApiError}. Checks use `instanceof`.
 *
 * @module
 */
export { NovaGuardError, AbortError, ValidationError, ConfigError, throwIfAborted, isAbortError } from './base.js';
export {
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
} from './api.js';
export type { NovaErrorInit, QuotaResource } from './api.js';
export { DeleteTimeoutError, DeleteFailedError, OrphanedServerError } from './delete.js';
export { OperationTimeoutError } from './timeout.js';
export type { FailureKind, FailureSummary } from './delete.js';
export { LedgerConfigError } from './ledger.js';
export type { LedgerConfigReason } from './ledger.js';
