/**
 * Errors of the Redis ledger.
 *
 * @module
 */
import { NovaGuardError } from '../errors/index.js';

/**
 * What says "Redis cannot be reached at all" rather than "slow": a refused connection, an unknown
 * host, an unreachable host, refused credentials (Redis's `WRONGPASS`, `NOAUTH`, `NOPERM`).
 */
export const DOWN_CODES = ['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'WRONGPASS', 'NOAUTH', 'NOPERM'] as const;

/**
 * The {@link DOWN_CODES} that say Redis refused this process's credentials (the URL's password or
 * ACL user), not that it is down: before the ledger ever answered, a setup error.
 */
export const AUTH_CODES: ReadonlySet<string> = new Set(['WRONGPASS', 'NOAUTH', 'NOPERM']);

/**
 * The `DOWN_CODES` (ECONNREFUSED, ENOTFOUND, EHOSTUNREACH, WRONGPASS, NOAUTH, NOPERM) entry `error` carries (its `code`, or a word of its message: Redis's own
 * replies name themselves at the start, `WRONGPASS invalid username-password pair`), or `undefined`.
 */
export function downCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && (DOWN_CODES as readonly string[]).includes(code)) return code;
  const message = error instanceof Error ? error.message : typeof error === 'string' ? error : '';
  return DOWN_CODES.find((c) => new RegExp(`\\b${c}\\b`).test(message));
}

/**
 * The Redis ledger could not do what was asked: Redis is unreachable, did not answer within
 * `commandTimeoutMs`, or answered with an error. The message never holds the Redis password. A
 * guard treats it as a lost store (it falls back to its in-process ledger and Nova's quota check).
 */
export class RedisLedgerError extends NovaGuardError {
  /**
   * True when Redis cannot be reached at all (see `DOWN_CODES` (ECONNREFUSED, ENOTFOUND, EHOSTUNREACH, WRONGPASS, NOAUTH, NOPERM): refused, unknown or
   * unreachable host, refused credentials): the guard skips the ledger at once and probes it
   * (`isLedgerDown`). False for a slow Redis, a timeout, a closed ledger, a script error.
   */
  readonly ledgerDown: boolean;
  /** The `DOWN_CODES` (ECONNREFUSED, ENOTFOUND, EHOSTUNREACH, WRONGPASS, NOAUTH, NOPERM) entry behind {@link ledgerDown}, when it is true. */
  readonly downCode: string | undefined;

  /**
   * @param message - What failed (redacted).
   * @param options - `cause`: the underlying error, redacted; `downCode`: the `DOWN_CODES` (ECONNREFUSED, ENOTFOUND, EHOSTUNREACH, WRONGPASS, NOAUTH, NOPERM)
   * entry when Redis cannot be reached at all (sets {@link ledgerDown}).
   */
  constructor(message: string, options?: { cause?: unknown; downCode?: string | undefined }) {
    super(message, options);
    this.downCode = options?.downCode;
    this.ledgerDown = options?.downCode !== undefined;
  }
}
