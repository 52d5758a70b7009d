/**
 * Errors of the Redis ledger.
 *
 * @module
 */
import { NovaGuardError } from '../errors/index.js';

/**
 * The Redis ledger could not do what was asked: Redis is unreachable, did not answer within
 * `commandTimeoutMs`, or answered with an error. The message never holds the Redis password. A
 * guard treats it as a lost store (it falls back to its in-process ledger and Nova's quota check).
 */
export class RedisLedgerError extends NovaGuardError {
  /**
   * @param message - What failed (redacted).
   * @param options - `cause`: the underlying error, redacted.
   */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
